#include "driver/tpu_driver.h"

#include <atomic>
#include <thread>

#include "driver/completion_event.h"
#include "gtest/gtest.h"
#include "proto/event_id.h"

namespace tpu::driver {
namespace {

xla::ShapeProto Array(xla::PrimitiveType type, std::vector<int64_t> dims) {
  xla::ShapeProto shape;
  shape.set_element_type(type);
  for (int64_t d : dims) shape.add_dimensions(d);
  return shape;
}

TEST(ComputeBytesFromShapeTest, ArraysAreElementCountTimesWidth) {
  EXPECT_EQ(ComputeBytesFromShape(Array(xla::F32, {2, 3})), 24);
  EXPECT_EQ(ComputeBytesFromShape(Array(xla::PRED, {7})), 7);
  EXPECT_EQ(ComputeBytesFromShape(Array(xla::BF16, {4, 4})), 32);
  EXPECT_EQ(ComputeBytesFromShape(Array(xla::C128, {3})), 48);
  EXPECT_EQ(ComputeBytesFromShape(Array(xla::S64, {})), 8);
  EXPECT_EQ(ComputeBytesFromShape(Array(xla::F32, {0, 5})), 0);
}

TEST(ComputeBytesFromShapeTest, TupleIsAPointerTable) {
  xla::ShapeProto tuple;
  tuple.set_element_type(xla::TUPLE);
  *tuple.add_tuple_shapes() = Array(xla::F32, {100});
  *tuple.add_tuple_shapes() = Array(xla::S8, {3});
  EXPECT_EQ(ComputeBytesFromShape(tuple), 16);
}

TEST(ComputeBytesFromShapeTest, BadShapesDoNotCrash) {
  EXPECT_EQ(ComputeBytesFromShape(Array(xla::F32, {-1, 4})), 0);
  EXPECT_EQ(ComputeBytesFromShape(Array(xla::TOKEN, {})), 0);
  EXPECT_EQ(ComputeBytesFromShape(
                Array(xla::F64, {int64_t{1} << 40, int64_t{1} << 40})),
            std::numeric_limits<int64_t>::max());
}

TEST(EventIdTest, PacksClientAboveOperation) {
  EventId id{5, 17};
  EXPECT_EQ(id.AsInt(), (uint64_t{5} << 44) | 17);
  EXPECT_EQ(EventId::FromInt(id.AsInt()), id);
  EXPECT_EQ(id.ToString(), "operation 17 (client 5)");
}

TEST(CompletionEventTest, CompletesOnceAndRunsCallbacks) {
  CompletionEvent event(EventId{1, 2}, 7);
  std::vector<absl::Status> seen;
  event.AddCallback([&](absl::Status s) { seen.push_back(s); });
  EXPECT_FALSE(event.AwaitWithTimeout(absl::ZeroDuration()).has_value());
  EXPECT_TRUE(event.Complete(absl::InternalError("boom")));
  EXPECT_FALSE(event.Complete(absl::OkStatus()));
  ASSERT_EQ(seen.size(), 1);
  EXPECT_EQ(seen[0].code(), absl::StatusCode::kInternal);
  EXPECT_EQ(event.Await().message(), "boom");
  // Already done: the callback runs right away on this thread.
  bool ran = false;
  event.AddCallback([&](absl::Status s) {
    ran = true;
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  });
  EXPECT_TRUE(ran);
}

TEST(CompletionEventTest, AwaitWakesOnCompletionFromAnotherThread) {
  auto event = std::make_shared<CompletionEvent>(EventId{1, 3}, 7);
  std::thread completer([event] { event->Complete(absl::OkStatus()); });
  EXPECT_TRUE(event->Await().ok());
  completer.join();
}

TEST(CompletionEventTest, DoneEventsHaveIdZero) {
  auto event = CompletionEvent::Done(absl::InvalidArgumentError("bad"));
  EXPECT_EQ(event->id().AsInt(), 0);
  EXPECT_EQ(event->Peek()->code(), absl::StatusCode::kInvalidArgument);
}

TEST(DriverSerialTest, NeverRepeats) {
  EXPECT_NE(NewDriverSerial(), NewDriverSerial());
}

}  // namespace
}  // namespace tpu::driver
