// StreamChannel over a transport whose writes never block: the submitting
// thread writes, and what completes inside its write defers callbacks to the
// channel's writer thread.

#include "driver/stream_channel.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

// Answers every entry inside Write, on the writing thread, as an in-process
// worker does for operations it runs inline. Records which thread wrote.
class InlineStream : public TransportStream {
 public:
  InlineStream(StreamCallbacks callbacks, bool inline_writes)
      : callbacks_(std::move(callbacks)), inline_writes_(inline_writes) {}
  ~InlineStream() override { Cancel(); }

  bool Write(std::vector<OutgoingEntry>& batch) override {
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return false;
      for (const OutgoingEntry& e : batch) {
        written_.push_back(e.entry.operation_id());
        writers_.push_back(std::this_thread::get_id());
      }
    }
    tpu_driver::StreamResponse response;
    for (const OutgoingEntry& e : batch) {
      response.add_entry()->set_operation_id(e.entry.operation_id());
    }
    callbacks_.on_response(response);
    return true;
  }
  bool WritesWithoutBlocking() const override { return inline_writes_; }
  void WritesDone() override { End(absl::OkStatus()); }
  void Cancel() override { End(absl::CancelledError("cancelled")); }

  std::vector<uint64_t> written() {
    absl::MutexLock lock(&mu_);
    return written_;
  }
  std::vector<std::thread::id> writers() {
    absl::MutexLock lock(&mu_);
    return writers_;
  }

 private:
  void End(const absl::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      if (ended_) return;
      ended_ = true;
    }
    callbacks_.on_done(status);
  }

  const StreamCallbacks callbacks_;
  const bool inline_writes_;
  absl::Mutex mu_;
  bool ended_ = false;
  std::vector<uint64_t> written_;
  std::vector<std::thread::id> writers_;
};

class InlineTransport : public Transport {
 public:
  explicit InlineTransport(bool inline_writes) : inline_(inline_writes) {}
  std::string address() const override { return "inline://"; }
  absl::StatusOr<tpu_driver::OpenResponse> Open(const tpu_driver::OpenRequest&,
                                                absl::Duration) override {
    return tpu_driver::OpenResponse();
  }
  absl::Status Close(const tpu_driver::CloseRequest&) override {
    return absl::OkStatus();
  }
  absl::Status Reset(const tpu_driver::ResetRequest&) override {
    return absl::OkStatus();
  }
  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override {
    return tpu_driver::SystemInfo();
  }
  std::unique_ptr<TransportStream> OpenStream(
      StreamCallbacks callbacks) override {
    auto stream = std::make_unique<InlineStream>(std::move(callbacks), inline_);
    stream_ = stream.get();
    return stream;
  }
  InlineStream* stream() { return stream_; }

 private:
  const bool inline_;
  InlineStream* stream_ = nullptr;
};

std::pair<OutgoingEntry, PendingOp> Op(uint64_t id) {
  OutgoingEntry entry;
  entry.entry.set_operation_id(id);
  PendingOp op;
  op.event = std::make_shared<CompletionEvent>(EventId::FromInt(id), 1);
  return {std::move(entry), std::move(op)};
}

TEST(StreamChannelTest, InlineTransportIsWrittenByTheSubmittingThread) {
  InlineTransport transport(/*inline_writes=*/true);
  StreamChannel channel("core 0", "inline://", &transport);
  auto [entry, op] = Op(7);
  std::shared_ptr<CompletionEvent> event = op.event;
  channel.Submit(std::move(entry), std::move(op));
  // Answered inside Submit: complete before Submit returned.
  ASSERT_TRUE(event->Peek().has_value());
  EXPECT_TRUE(event->Peek()->ok());
  ASSERT_EQ(transport.stream()->writers().size(), 1u);
  EXPECT_EQ(transport.stream()->writers()[0], std::this_thread::get_id());
}

TEST(StreamChannelTest, OtherTransportsAreWrittenByTheWriterThread) {
  InlineTransport transport(/*inline_writes=*/false);
  StreamChannel channel("core 0", "inline://", &transport);
  auto [entry, op] = Op(7);
  std::shared_ptr<CompletionEvent> event = op.event;
  channel.Submit(std::move(entry), std::move(op));
  EXPECT_TRUE(event->Await().ok());
  ASSERT_EQ(transport.stream()->writers().size(), 1u);
  EXPECT_NE(transport.stream()->writers()[0], std::this_thread::get_id());
}

TEST(StreamChannelTest, CallbacksOfInlineCompletionsRunOffTheSubmittingThread) {
  InlineTransport transport(/*inline_writes=*/true);
  StreamChannel channel("core 0", "inline://", &transport);
  auto [entry, op] = Op(1);
  std::shared_ptr<CompletionEvent> event = op.event;
  // The caller holds a lock that the callback takes, as a layer above the
  // driver may: run on the submitting thread, the callback would deadlock.
  absl::Mutex caller_lock;
  absl::Notification ran;
  std::thread::id callback_thread;
  event->AddCallback([&](absl::Status status) {
    absl::MutexLock lock(&caller_lock);
    callback_thread = std::this_thread::get_id();
    ran.Notify();
  });
  {
    absl::MutexLock lock(&caller_lock);
    channel.Submit(std::move(entry), std::move(op));
    ASSERT_TRUE(event->Peek().has_value());
  }
  ran.WaitForNotification();
  EXPECT_NE(callback_thread, std::this_thread::get_id());
}

TEST(StreamChannelTest, ACallbackMaySubmitAndAwaitOnTheSameStream) {
  InlineTransport transport(/*inline_writes=*/true);
  StreamChannel channel("core 0", "inline://", &transport);
  auto [first, first_op] = Op(1);
  absl::Notification second_done;
  absl::Status second_status = absl::UnknownError("not run");
  first_op.event->AddCallback([&](absl::Status) {
    auto [second, second_op] = Op(2);
    std::shared_ptr<CompletionEvent> event = second_op.event;
    channel.Submit(std::move(second), std::move(second_op));
    second_status = event->Await();
    second_done.Notify();
  });
  channel.Submit(std::move(first), std::move(first_op));
  second_done.WaitForNotification();
  EXPECT_TRUE(second_status.ok());
  EXPECT_EQ(transport.stream()->written(), (std::vector<uint64_t>{1, 2}));
}

TEST(StreamChannelTest, EntriesFromManyThreadsAreWrittenOnceEach) {
  InlineTransport transport(/*inline_writes=*/true);
  StreamChannel channel("core 0", "inline://", &transport);
  constexpr int kThreads = 4, kPerThread = 200;
  std::vector<std::shared_ptr<CompletionEvent>> events(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t id = 1 + t * kPerThread + i;
        auto [entry, op] = Op(id);
        events[id - 1] = op.event;
        channel.Submit(std::move(entry), std::move(op));
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : events) EXPECT_TRUE(e->Await().ok());
  std::vector<uint64_t> written = transport.stream()->written();
  ASSERT_EQ(written.size(), events.size());
  std::sort(written.begin(), written.end());
  for (size_t i = 0; i < written.size(); ++i) EXPECT_EQ(written[i], i + 1);
}

}  // namespace
}  // namespace tpu::driver
