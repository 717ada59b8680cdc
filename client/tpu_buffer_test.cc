#include "client/tpu_buffer.h"

#include <cstring>

#include "absl/strings/match.h"
#include "driver/testing/fake_driver.h"
#include "gtest/gtest.h"

namespace tpu::client {
namespace {

using driver::testing::FakeWorker;
using driver::testing::FakeWorkerOptions;

Literal F32(std::vector<int64_t> dims, std::vector<float> values) {
  return Literal::FromVector<float>(xla::F32, std::move(dims), values);
}
Literal S32(std::vector<int64_t> dims, std::vector<int32_t> values) {
  return Literal::FromVector<int32_t>(xla::S32, std::move(dims), values);
}

class TpuBufferTest : public ::testing::Test {
 protected:
  TpuBufferTest() {
    FakeWorkerOptions options;
    options.chips = 2;
    options.cores_per_chip = 2;
    worker_ = FakeWorker::Create(options);
    client_ = *TpuClient::Create(worker_->NewDriver());
  }

  std::shared_ptr<FakeWorker> worker_;
  std::shared_ptr<TpuClient> client_;
};

TEST_F(TpuBufferTest, ArrayRoundTripsBitExact) {
  // NaN payloads and negative zero must survive untouched.
  uint32_t bits[] = {0x7fc01234u, 0x80000000u, 0x3f800001u, 0xff800000u};
  float values[4];
  std::memcpy(values, bits, sizeof(bits));
  Literal literal = F32({2, 2}, {values[0], values[1], values[2], values[3]});
  absl::StatusOr<std::unique_ptr<TpuBuffer>> buffer =
      TpuBuffer::FromLiteral(literal, client_, 3);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  EXPECT_EQ((*buffer)->device()->id(), 3);
  EXPECT_EQ((*buffer)->on_host_shape(), Shape::Array(xla::F32, {2, 2}));
  absl::StatusOr<Literal> back = (*buffer)->ToLiteral();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(std::memcmp(back->untyped_data(), bits, sizeof(bits)), 0);
  EXPECT_EQ(*back, literal);
}

TEST_F(TpuBufferTest, HostCopyIsRequestedOnce) {
  auto buffer = *TpuBuffer::FromLiteral(S32({3}, {1, 2, 3}), client_, 0);
  ASSERT_TRUE(buffer->CopyToHostAsync().ok());
  ASSERT_TRUE(buffer->CopyToHostAsync().ok());
  EXPECT_TRUE(buffer->ToLiteral().ok());
  EXPECT_TRUE(buffer->ToLiteral().ok());
  EXPECT_EQ(worker_->issued("TransferFromDevice"), 1);
}

TEST_F(TpuBufferTest, NestedTuplesRoundTrip) {
  Literal inner = Literal::Tuple({S32({2}, {7, -7}), F32({}, {0.5f})});
  Literal literal =
      Literal::Tuple({F32({1}, {1.0f}), inner, Literal::Tuple({})});
  auto buffer = *TpuBuffer::FromLiteral(literal, client_, 1);
  // 3 arrays + 3 tuples.
  EXPECT_EQ(worker_->live_buffers(), 6);
  absl::StatusOr<Literal> back = buffer->ToLiteral();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, literal);
  buffer.reset();
  EXPECT_EQ(worker_->live_buffers(), 0);
}

TEST_F(TpuBufferTest, FromHostBuffersReadsTheLentMemoryAndReturnsIt) {
  const float floats[3] = {1.5f, -2.0f, 0.25f};
  const int32_t ints[2] = {7, -7};
  const Shape shape = Shape::Tuple(
      {Shape::Array(xla::F32, {3}), Shape::Array(xla::S32, {2, 1})});
  const void* const leaves[] = {floats, ints};
  int returned = 0;
  absl::StatusOr<std::unique_ptr<TpuBuffer>> buffer =
      TpuBuffer::FromHostBuffers(
          shape, leaves, [&returned] { ++returned; }, client_, 2);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  // The fake driver transfers on the calling thread, so the memory is
  // already given back.
  EXPECT_EQ(returned, 1);
  absl::StatusOr<Literal> back = (*buffer)->ToLiteral();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Literal::Tuple(
                       {F32({3}, {1.5f, -2.0f, 0.25f}), S32({2, 1}, {7, -7})}));
}

TEST_F(TpuBufferTest, FromHostBuffersReturnsTheMemoryOnFailure) {
  const float value = 1.0f;
  const void* const one_leaf[] = {&value};
  int returned = 0;
  auto count = [&returned] { ++returned; };
  const Shape pair =
      Shape::Tuple({Shape::Array(xla::F32, {}), Shape::Array(xla::F32, {})});
  absl::StatusOr<std::unique_ptr<TpuBuffer>> buffer =
      TpuBuffer::FromHostBuffers(pair, one_leaf, count, client_, 0);
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(buffer.status().message(), "2 array leaves"))
      << buffer.status();
  buffer = TpuBuffer::FromHostBuffers(Shape::Array(xla::F32, {}), one_leaf,
                                      count, client_, 9);
  EXPECT_EQ(buffer.status().message(),
            "TpuBuffer::FromHostBuffers got bad device_id: 9 "
            "(num_devices=4).");
  EXPECT_EQ(returned, 2);
  EXPECT_EQ(worker_->live_buffers(), 0);
}

TEST_F(TpuBufferTest, EmptyTupleReadsBackWithoutTransfers) {
  auto buffer = *TpuBuffer::FromLiteral(Literal::Tuple({}), client_, 0);
  absl::StatusOr<Literal> back = buffer->ToLiteral();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->tuple_size(), 0);
  EXPECT_EQ(worker_->issued("TransferFromDevice"), 0);
}

TEST_F(TpuBufferTest, Rejects64BitTypesWithTheReferenceGuidance) {
  const std::string expected =
      "64-bit data types are not yet supported on the TPU driver API. "
      "Convert inputs to float32/int32 before using.";
  std::vector<Literal> literals = {
      Literal::FromVector<int64_t>(xla::S64, {1}, {int64_t{1}}),
      Literal::FromVector<uint64_t>(xla::U64, {1}, {uint64_t{1}}),
      Literal::FromVector<double>(xla::F64, {1}, {1.0}),
      Literal::FromVector<std::complex<double>>(xla::C128, {1}, {{1.0, 0.0}}),
      Literal::Tuple({F32({1}, {1.0f}),
                      Literal::FromVector<double>(xla::F64, {1}, {1.0})}),
  };
  for (const Literal& literal : literals) {
    absl::StatusOr<std::unique_ptr<TpuBuffer>> buffer =
        TpuBuffer::FromLiteral(literal, client_, 0);
    ASSERT_FALSE(buffer.ok()) << literal.shape().ToString();
    EXPECT_EQ(buffer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(buffer.status().message(), expected);
  }
  absl::StatusOr<std::unique_ptr<TpuBuffer>> allocated =
      TpuBuffer::AllocateBuffer(Shape::Array(xla::S64, {2}), client_, 0);
  EXPECT_EQ(allocated.status().message(), expected);
  // Nothing was allocated for the rejected tuple's f32 element either.
  EXPECT_EQ(worker_->live_buffers(), 0);
}

TEST_F(TpuBufferTest, BadDeviceAndTokenShapes) {
  absl::StatusOr<std::unique_ptr<TpuBuffer>> buffer =
      TpuBuffer::FromLiteral(F32({1}, {1}), client_, 4);
  EXPECT_EQ(buffer.status().message(),
            "TpuBuffer::FromLiteral got bad device_id: 4 (num_devices=4).");
  buffer = TpuBuffer::AllocateBuffer(Shape::Token(), client_, 0);
  EXPECT_EQ(buffer.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TpuBufferTest, AllocateBufferIsRecursive) {
  Shape shape = Shape::Tuple({Shape::Array(xla::F32, {4}),
                              Shape::Tuple({Shape::Array(xla::S32, {}),
                                            Shape::Array(xla::PRED, {2})})});
  auto buffer = *TpuBuffer::AllocateBuffer(shape, client_, 2);
  EXPECT_EQ(worker_->live_buffers(), 5);
  EXPECT_EQ(buffer->on_host_shape(), shape);
  auto elements = *buffer->DestructureTuple();
  ASSERT_EQ(elements.size(), 2u);
  EXPECT_EQ(elements[1]->on_host_shape(), shape.tuple_shapes()[1]);
  EXPECT_EQ(elements[1]->device()->id(), 2);
}

TEST_F(TpuBufferTest, MakeTupleSharesElements) {
  auto a = *TpuBuffer::FromLiteral(F32({2}, {1, 2}), client_, 1);
  auto b = *TpuBuffer::FromLiteral(S32({}, {9}), client_, 1);
  std::vector<TpuBuffer*> elements = {a.get(), b.get()};
  absl::StatusOr<std::unique_ptr<TpuBuffer>> tuple =
      TpuBuffer::MakeTuple(elements, client_, 1);
  ASSERT_TRUE(tuple.ok()) << tuple.status();
  a.reset();  // the tuple keeps the element's memory
  absl::StatusOr<Literal> back = (*tuple)->ToLiteral();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Literal::Tuple({F32({2}, {1, 2}), S32({}, {9})}));

  auto elsewhere = *TpuBuffer::FromLiteral(F32({1}, {1}), client_, 0);
  std::vector<TpuBuffer*> mixed = {b.get(), elsewhere.get()};
  absl::StatusOr<std::unique_ptr<TpuBuffer>> bad =
      TpuBuffer::MakeTuple(mixed, client_, 1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      absl::StrContains(bad.status().message(), "element 1 is on TPU_0"))
      << bad.status();
}

TEST_F(TpuBufferTest, DeleteInvalidatesAndReleases) {
  auto buffer = *TpuBuffer::FromLiteral(F32({2}, {1, 2}), client_, 0);
  EXPECT_EQ(worker_->live_buffers(), 1);
  buffer->Delete();
  buffer->Delete();  // idempotent
  EXPECT_TRUE(buffer->IsDeleted());
  EXPECT_EQ(worker_->live_buffers(), 0);
  EXPECT_EQ(buffer->CopyToHostAsync().message(),
            "CopyToHostAsync() called on invalid buffer.");
  EXPECT_EQ(buffer->ToLiteral().status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(buffer->BlockHostUntilReady().message(),
            "BlockHostUntilReady() called on deleted or donated buffer");
  EXPECT_EQ(buffer->CopyToDevice(1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TpuBufferTest, DestructureTupleErrors) {
  auto array = *TpuBuffer::FromLiteral(F32({2}, {1, 2}), client_, 0);
  absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> got =
      array->DestructureTuple();
  EXPECT_EQ(got.status().message(),
            "Attempted to destructure a TpuBuffer that did not have a tuple "
            "shape; shape: f32[2].");
  auto tuple =
      *TpuBuffer::FromLiteral(Literal::Tuple({F32({1}, {3})}), client_, 0);
  tuple->Delete();
  EXPECT_EQ(tuple->DestructureTuple().status().message(),
            "Attempted to destructure a deleted buffer.");
}

TEST_F(TpuBufferTest, CopyToDeviceAliasesOrCopies) {
  Literal literal = S32({2, 2}, {1, 2, 3, 4});
  auto src = *TpuBuffer::FromLiteral(literal, client_, 0);

  auto same = *src->CopyToDevice(0);
  EXPECT_EQ(same->device_buffer(), src->device_buffer());
  EXPECT_EQ(worker_->issued("TransferFromDeviceToDevice"), 0);

  absl::StatusOr<std::unique_ptr<TpuBuffer>> other = src->CopyToDevice(3);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ((*other)->device()->id(), 3);
  EXPECT_EQ(worker_->issued("TransferFromDeviceToDevice"), 1);
  src.reset();
  same.reset();
  absl::StatusOr<Literal> back = (*other)->ToLiteral();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, literal);

  auto tuple = *TpuBuffer::FromLiteral(Literal::Tuple({literal}), client_, 0);
  absl::StatusOr<std::unique_ptr<TpuBuffer>> tuple_copy =
      tuple->CopyToDevice(1);
  EXPECT_EQ(tuple_copy.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(tuple_copy.status().message(),
            "CopyToDevice for tuples is not supported.");
  EXPECT_EQ((*other)->CopyToDevice(17).status().message(),
            "TpuBuffer::CopyToDevice got bad device_id: 17 (num_devices=4).");
}

TEST_F(TpuBufferTest, BlockHostUntilReady) {
  auto buffer = *TpuBuffer::FromLiteral(
      Literal::Tuple({F32({1}, {1}), S32({}, {2})}), client_, 0);
  EXPECT_TRUE(buffer->BlockHostUntilReady().ok());
}

}  // namespace
}  // namespace tpu::client
