// StreamChannel over a transport whose writes never block: the submitting
// thread writes, and what completes inside its write defers callbacks to the
// channel's writer thread. Over a transport that reads on demand: a waiting
// thread writes and reads itself, callbacks and timed waits are served by
// the channel's threads.

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

// Reads on demand, as gRPC's synchronous stream: each written batch is
// answered by one response, which arrives only when some thread calls
// ReadNext. Records which threads wrote and read.
class PullStream : public TransportStream {
 public:
  explicit PullStream(StreamCallbacks callbacks)
      : callbacks_(std::move(callbacks)) {}
  ~PullStream() override {
    Cancel();
    while (ReadNext()) {
    }
  }

  // Later writes are never answered.
  void SwallowWrites() {
    absl::MutexLock lock(&mu_);
    swallow_ = true;
  }

  bool Write(std::vector<OutgoingEntry>& batch) override {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return false;
    writers_.push_back(std::this_thread::get_id());
    if (swallow_) return true;
    tpu_driver::StreamResponse response;
    for (const OutgoingEntry& e : batch) {
      response.add_entry()->set_operation_id(e.entry.operation_id());
    }
    answers_.push_back(std::move(response));
    return true;
  }
  bool ReadsOnDemand() const override { return true; }
  bool ReadNext() override {
    tpu_driver::StreamResponse response;
    {
      absl::MutexLock lock(&mu_);
      if (read_ended_) return false;
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !answers_.empty() || cancelled_ || half_closed_;
      };
      mu_.Await(absl::Condition(&ready));
      if (answers_.empty()) {
        read_ended_ = true;
      } else {
        response = std::move(answers_.front());
        answers_.erase(answers_.begin());
        readers_.push_back(std::this_thread::get_id());
      }
    }
    if (response.entry_size() == 0) {
      callbacks_.on_done(absl::CancelledError("cancelled"));
      return false;
    }
    callbacks_.on_response(response);
    return true;
  }
  void WritesDone() override {
    absl::MutexLock lock(&mu_);
    half_closed_ = true;
  }
  void Cancel() override {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }

  std::vector<std::thread::id> writers() {
    absl::MutexLock lock(&mu_);
    return writers_;
  }
  std::vector<std::thread::id> readers() {
    absl::MutexLock lock(&mu_);
    return readers_;
  }

 private:
  const StreamCallbacks callbacks_;
  absl::Mutex mu_;
  std::vector<tpu_driver::StreamResponse> answers_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool half_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool read_ended_ ABSL_GUARDED_BY(mu_) = false;
  bool swallow_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread::id> writers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread::id> readers_ ABSL_GUARDED_BY(mu_);
};

class PullTransport : public InlineTransport {
 public:
  PullTransport() : InlineTransport(/*inline_writes=*/false) {}
  std::unique_ptr<TransportStream> OpenStream(
      StreamCallbacks callbacks) override {
    auto stream = std::make_unique<PullStream>(std::move(callbacks));
    stream_ = stream.get();
    return stream;
  }
  PullStream* stream() { return stream_; }

 private:
  PullStream* stream_ = nullptr;
};

// Neither the writer nor the reader thread acts on its own: only a waiting
// thread, a callback or a timed wait makes them (no timing in the tests).
StreamChannelOptions OnlyWhenAsked() {
  StreamChannelOptions options;
  options.coalescing_window = absl::InfiniteDuration();
  options.lazy_read_delay = absl::InfiniteDuration();
  options.idle_check = absl::InfiniteDuration();
  return options;
}

TEST(StreamChannelTest, AnAwaitingThreadSendsItsOperationAndReadsTheAnswer) {
  PullTransport transport;
  StreamChannel channel("core 0", "pull://", &transport, OnlyWhenAsked());
  auto [first, first_op] = Op(1);
  auto [second, second_op] = Op(2);
  std::shared_ptr<CompletionEvent> first_event = first_op.event;
  std::shared_ptr<CompletionEvent> second_event = second_op.event;
  channel.Submit(std::move(first), std::move(first_op));
  channel.Submit(std::move(second), std::move(second_op));
  EXPECT_TRUE(second_event->Await().ok());
  // Both went out in one message, written and answered on this thread.
  EXPECT_EQ(transport.stream()->writers(),
            std::vector<std::thread::id>{std::this_thread::get_id()});
  EXPECT_EQ(transport.stream()->readers(),
            std::vector<std::thread::id>{std::this_thread::get_id()});
  ASSERT_TRUE(first_event->Peek().has_value());
  EXPECT_TRUE(first_event->Peek()->ok());
}

TEST(StreamChannelTest, AnOperationWithACallbackCompletesWithoutAWaiter) {
  PullTransport transport;
  StreamChannel channel("core 0", "pull://", &transport, OnlyWhenAsked());
  auto [entry, op] = Op(1);
  std::shared_ptr<CompletionEvent> event = op.event;
  channel.Submit(std::move(entry), std::move(op));
  absl::Notification ran;
  std::thread::id callback_thread;
  event->AddCallback([&](absl::Status status) {
    EXPECT_TRUE(status.ok());
    callback_thread = std::this_thread::get_id();
    ran.Notify();
  });
  ran.WaitForNotification();
  // The writer and reader threads did it: nobody drove the stream.
  EXPECT_NE(callback_thread, std::this_thread::get_id());
  ASSERT_EQ(transport.stream()->writers().size(), 1u);
  EXPECT_NE(transport.stream()->writers()[0], std::this_thread::get_id());
}

TEST(StreamChannelTest, ATimedWaitIsAnsweredWithoutDriving) {
  PullTransport transport;
  StreamChannel channel("core 0", "pull://", &transport, OnlyWhenAsked());
  auto [entry, op] = Op(1);
  std::shared_ptr<CompletionEvent> event = op.event;
  channel.Submit(std::move(entry), std::move(op));
  std::optional<absl::Status> status;
  while (!status.has_value()) {
    status = event->AwaitWithTimeout(absl::Milliseconds(100));
  }
  EXPECT_TRUE(status->ok());
  ASSERT_EQ(transport.stream()->readers().size(), 1u);
  EXPECT_NE(transport.stream()->readers()[0], std::this_thread::get_id());
}

TEST(StreamChannelTest, ResponsesNobodyWaitsForAreReadByTheChannel) {
  PullTransport transport;
  StreamChannelOptions options;
  options.coalescing_window = absl::ZeroDuration();
  options.lazy_read_delay = absl::Milliseconds(1);
  options.idle_check = absl::Milliseconds(1);
  StreamChannel channel("core 0", "pull://", &transport, options);
  auto [entry, op] = Op(1);
  std::shared_ptr<CompletionEvent> event = op.event;
  channel.Submit(std::move(entry), std::move(op));
  // No waiter, no callback: the writer sends it and the reader reads its
  // answer on their own (this loop never drives the stream).
  while (channel.NumPendingForTesting() > 0) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_TRUE(event->Peek().has_value());
  EXPECT_TRUE(event->Peek()->ok());
  ASSERT_EQ(transport.stream()->readers().size(), 1u);
  EXPECT_NE(transport.stream()->readers()[0], std::this_thread::get_id());
  EXPECT_NE(transport.stream()->writers()[0], std::this_thread::get_id());
}

TEST(StreamChannelTest, ShutdownReleasesAThreadWaitingInsideARead) {
  PullTransport transport;
  StreamChannel channel("core 0", "pull://", &transport, OnlyWhenAsked());
  transport.stream()->SwallowWrites();  // nothing will answer
  auto [entry, op] = Op(1);
  std::shared_ptr<CompletionEvent> event = op.event;
  channel.Submit(std::move(entry), std::move(op));
  absl::Status status;
  absl::Notification done;
  std::thread waiter([&] {
    status = event->Await();
    done.Notify();
  });
  // Whether or not the waiter is inside ReadNext yet, Shutdown ends it.
  channel.Shutdown(absl::StatusCode::kAborted, "the test closed the driver");
  done.WaitForNotification();
  waiter.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_NE(status.message().find("the test closed the driver"),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace tpu::driver
