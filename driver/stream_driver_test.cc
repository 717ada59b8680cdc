// StreamDriver's protocol logic against a scripted transport: what goes on the
// wire, how responses complete events, and what happens when streams end.

#include "driver/stream_driver.h"

#include <cstring>
#include <deque>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace tpu::driver {
namespace {

using tpu_driver::StreamRequest;
using tpu_driver::StreamResponse;

constexpr uint32_t kClientId = 5;

uint64_t Wire(uint64_t op) { return uint64_t{kClientId} << 44 | op; }

// Everything the fake worker saw, shared with the test after the driver owns
// the transport.
struct FakeWorker {
  absl::Mutex mu;
  struct Stream {
    StreamCallbacks callbacks;
    bool ended = false;
  };
  std::vector<std::shared_ptr<Stream>> streams ABSL_GUARDED_BY(mu);
  // Entries received, with the index of their stream; transfer_to data is
  // filled in from the payload.
  std::vector<std::pair<int, StreamRequest::Entry>> received
      ABSL_GUARDED_BY(mu);
  int writes ABSL_GUARDED_BY(mu) = 0;
  bool block_writes ABSL_GUARDED_BY(mu) = false;
  // Answer every entry OK right away (transfer_from with `readback`).
  bool auto_respond ABSL_GUARDED_BY(mu) = false;
  std::string readback ABSL_GUARDED_BY(mu);
  std::vector<uint32_t> closed ABSL_GUARDED_BY(mu);
  int resets ABSL_GUARDED_BY(mu) = 0;
  absl::Status close_status ABSL_GUARDED_BY(mu);
  int cores = 2;

  int NumReceived() {
    absl::MutexLock lock(&mu);
    return static_cast<int>(received.size());
  }
  StreamRequest::Entry Received(int i) {
    absl::MutexLock lock(&mu);
    return received.at(i).second;
  }
  int StreamOf(int i) {
    absl::MutexLock lock(&mu);
    return received.at(i).first;
  }
  bool WaitReceived(int n) {
    absl::MutexLock lock(&mu);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return static_cast<int>(received.size()) >= n;
    };
    return mu.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  // Delivers a response on stream `s` (from the test thread).
  void Respond(int s, StreamResponse response) {
    std::shared_ptr<Stream> stream;
    {
      absl::MutexLock lock(&mu);
      stream = streams.at(s);
    }
    stream->callbacks.on_response(response);
  }
  void RespondOk(uint64_t wire_id) {
    StreamResponse response;
    auto* entry = response.add_entry();
    entry->set_operation_id(wire_id);
    entry->mutable_status()->set_code(0);
    Respond(StreamOfOp(wire_id), response);
  }
  int StreamOfOp(uint64_t wire_id) {
    absl::MutexLock lock(&mu);
    for (auto& [s, e] : received) {
      if (e.operation_id() == static_cast<int64_t>(wire_id)) return s;
    }
    return 0;
  }
  void BreakAll(absl::Status status) {
    std::vector<std::shared_ptr<Stream>> all;
    {
      absl::MutexLock lock(&mu);
      all = streams;
    }
    for (auto& s : all) End(s, status);
  }
  void End(const std::shared_ptr<Stream>& s, absl::Status status) {
    {
      absl::MutexLock lock(&mu);
      if (s->ended) return;
      s->ended = true;
    }
    s->callbacks.on_done(status);
  }
};

class FakeStream : public TransportStream {
 public:
  FakeStream(std::shared_ptr<FakeWorker> worker, int index)
      : worker_(std::move(worker)), index_(index) {}
  ~FakeStream() override { Cancel(); }

  bool Write(std::vector<OutgoingEntry>& batch) override {
    StreamResponse auto_response;
    std::shared_ptr<FakeWorker::Stream> stream;
    {
      absl::MutexLock lock(&worker_->mu);
      worker_->mu.Await(absl::Condition(
          +[](bool* blocked) { return !*blocked; }, &worker_->block_writes));
      stream = worker_->streams[index_];
      if (stream->ended) return false;
      ++worker_->writes;
      for (auto& out : batch) {
        StreamRequest::Entry entry = out.entry;
        if (entry.has_transfer_to()) {
          entry.mutable_transfer_to()->set_data(std::string(out.payload));
        }
        if (worker_->auto_respond) {
          auto* r = auto_response.add_entry();
          r->set_operation_id(entry.operation_id());
          r->mutable_status()->set_code(0);
          if (entry.has_transfer_from()) {
            r->mutable_transfer_from()->set_data(worker_->readback);
          }
          if (entry.has_compile()) {
            auto* shape = r->mutable_compile()
                              ->mutable_metadata()
                              ->mutable_program_shape();
            shape->add_parameter_names("p0");
          }
        }
        worker_->received.emplace_back(index_, std::move(entry));
      }
    }
    if (auto_response.entry_size() > 0) {
      stream->callbacks.on_response(auto_response);
    }
    return true;
  }
  void WritesDone() override {}  // A fake that never finishes gracefully.
  void Cancel() override {
    std::shared_ptr<FakeWorker::Stream> stream;
    {
      absl::MutexLock lock(&worker_->mu);
      stream = worker_->streams[index_];
    }
    worker_->End(stream, absl::CancelledError("cancelled"));
  }

 private:
  std::shared_ptr<FakeWorker> worker_;
  int index_;
};

class FakeTransport : public Transport {
 public:
  explicit FakeTransport(std::shared_ptr<FakeWorker> worker)
      : worker_(std::move(worker)) {}
  std::string address() const override { return "fake://w"; }
  absl::StatusOr<tpu_driver::OpenResponse> Open(const tpu_driver::OpenRequest&,
                                                absl::Duration) override {
    tpu_driver::OpenResponse response;
    response.set_client_id(kClientId);
    return response;
  }
  absl::Status Close(const tpu_driver::CloseRequest& request) override {
    absl::MutexLock lock(&worker_->mu);
    worker_->closed.push_back(request.client_id());
    return worker_->close_status;
  }
  absl::Status Reset(const tpu_driver::ResetRequest&) override {
    absl::MutexLock lock(&worker_->mu);
    ++worker_->resets;
    return absl::OkStatus();
  }
  absl::StatusOr<tpu_driver::SystemInfo> QuerySystemInfo() override {
    tpu_driver::SystemInfo info;
    auto* chip = info.add_tpu_chip();
    for (int i = 0; i < worker_->cores; ++i) chip->add_core()->set_id(i);
    return info;
  }
  std::unique_ptr<TransportStream> OpenStream(
      StreamCallbacks callbacks) override {
    absl::MutexLock lock(&worker_->mu);
    auto stream = std::make_shared<FakeWorker::Stream>();
    stream->callbacks = std::move(callbacks);
    worker_->streams.push_back(stream);
    return std::make_unique<FakeStream>(
        worker_, static_cast<int>(worker_->streams.size()) - 1);
  }

 private:
  std::shared_ptr<FakeWorker> worker_;
};

class StreamDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { driver_ = Open(worker_); }

  static std::unique_ptr<StreamDriver> Open(
      std::shared_ptr<FakeWorker> worker) {
    StreamDriverOptions options;
    options.close_grace = absl::Milliseconds(50);
    auto driver = StreamDriver::Create(
        std::make_unique<FakeTransport>(std::move(worker)), options);
    EXPECT_TRUE(driver.ok()) << driver.status();
    return *std::move(driver);
  }

  void SetAutoRespond(std::string readback = "") {
    absl::MutexLock lock(&worker_->mu);
    worker_->auto_respond = true;
    worker_->readback = std::move(readback);
  }

  std::shared_ptr<FakeWorker> worker_ = std::make_shared<FakeWorker>();
  std::unique_ptr<StreamDriver> driver_;
};

TEST_F(StreamDriverTest, OneStreamPerCorePlusHost) {
  absl::MutexLock lock(&worker_->mu);
  EXPECT_EQ(worker_->streams.size(), 3);
  EXPECT_EQ(driver_->client_id(), kClientId);
  EXPECT_EQ(driver_->core_ids(), std::vector<int32_t>({0, 1}));
}

TEST_F(StreamDriverTest, OperationIdsCarryTheClientIdAndHandlesAreDeps) {
  auto buffer = driver_->Allocate(1, tpu_driver::HBM, 16, {});
  char data[16] = "0123456789abcde";
  auto to = driver_->TransferToDevice(data, buffer.get(), {});
  ASSERT_TRUE(worker_->WaitReceived(2));
  StreamRequest::Entry alloc = worker_->Received(0);
  StreamRequest::Entry transfer = worker_->Received(1);
  EXPECT_EQ(alloc.operation_id(), Wire(1));
  EXPECT_EQ(alloc.alloc().core_id(), 1);
  EXPECT_EQ(alloc.alloc().num_bytes(), 16);
  EXPECT_EQ(worker_->StreamOf(0), 1);  // core 1's stream
  EXPECT_EQ(transfer.operation_id(), Wire(2));
  EXPECT_EQ(transfer.transfer_to().target_handle(), Wire(1));
  EXPECT_EQ(transfer.transfer_to().data(), std::string(data, 16));
  // The allocation had not completed: the transfer names it.
  ASSERT_EQ(transfer.wait_for_id_size(), 1);
  EXPECT_EQ(transfer.wait_for_id(0), Wire(1));

  worker_->RespondOk(Wire(1));
  worker_->RespondOk(Wire(2));
  EXPECT_TRUE(buffer->OnReady()->Await().ok());
  EXPECT_TRUE(to->Await().ok());
  // Now the allocation is known done: nothing to wait for on the wire.
  auto to2 = driver_->TransferToDevice(data, buffer.get(), {to.get()});
  ASSERT_TRUE(worker_->WaitReceived(3));
  EXPECT_EQ(worker_->Received(2).wait_for_id_size(), 0);
  worker_->RespondOk(Wire(3));
  EXPECT_TRUE(to2->Await().ok());
}

TEST_F(StreamDriverTest, ExplicitWaitForIdsAreSent) {
  auto a = driver_->Allocate(0, tpu_driver::HBM, 4, {});
  auto b = driver_->Allocate(1, tpu_driver::HBM, 4, {a->OnReady().get()});
  ASSERT_TRUE(worker_->WaitReceived(2));
  // Different streams: either may have arrived first.
  StreamRequest::Entry entry = worker_->Received(0);
  if (entry.operation_id() != Wire(2)) entry = worker_->Received(1);
  ASSERT_EQ(entry.operation_id(), Wire(2));
  ASSERT_EQ(entry.wait_for_id_size(), 1);
  EXPECT_EQ(entry.wait_for_id(0), Wire(1));
}

TEST_F(StreamDriverTest, FailedDependencyFailsUpFrontNamingIt) {
  auto buffer = driver_->Allocate(0, tpu_driver::HBM, 8, {});
  ASSERT_TRUE(worker_->WaitReceived(1));
  StreamResponse response;
  auto* entry = response.add_entry();
  entry->set_operation_id(Wire(1));
  entry->mutable_status()->set_code(
      static_cast<int>(absl::StatusCode::kResourceExhausted));
  entry->mutable_status()->set_message("out of HBM");
  worker_->Respond(0, response);
  EXPECT_EQ(buffer->OnReady()->Await().code(),
            absl::StatusCode::kResourceExhausted);

  char out[8];
  absl::Status status =
      driver_->TransferFromDevice(buffer.get(), out, {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("dependency operation 1 (client 5) failed"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("out of HBM"), std::string::npos) << status;
  EXPECT_EQ(worker_->NumReceived(), 1);  // Never sent.
}

TEST_F(StreamDriverTest, TransferFromCopiesAndChecksTheSize) {
  SetAutoRespond("abcdefgh");
  auto buffer = driver_->Allocate(0, tpu_driver::HBM, 8, {});
  char out[9] = {};
  EXPECT_TRUE(driver_->TransferFromDevice(buffer.get(), out, {})->Await().ok());
  EXPECT_STREQ(out, "abcdefgh");

  SetAutoRespond("abc");
  auto small = driver_->Allocate(0, tpu_driver::HBM, 8, {});
  absl::Status status =
      driver_->TransferFromDevice(small.get(), out, {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("expected 8 bytes, received 3"),
            std::string::npos)
      << status;
}

TEST_F(StreamDriverTest, CompileMetadataReachesTheHandle) {
  SetAutoRespond();
  auto program = driver_->CompileProgram(xla::HloProto(), 1, {});
  auto shape = program->program_shape();
  ASSERT_TRUE(shape.ok()) << shape.status();
  ASSERT_EQ(shape->parameter_names_size(), 1);
  EXPECT_EQ(shape->parameter_names(0), "p0");
  EXPECT_EQ(worker_->StreamOf(0), 0);  // Compiles go on the first core.
  auto loaded = driver_->LoadProgram(1, program.get(), {});
  EXPECT_TRUE(loaded->OnReady()->Await().ok());
  EXPECT_EQ(worker_->Received(1).load().compiled_program_handle(), Wire(1));
}

TEST_F(StreamDriverTest, ExecuteNamesProgramInputsAndOutputs) {
  SetAutoRespond();
  auto program = driver_->CompileProgram(xla::HloProto(), 1, {});
  auto loaded = driver_->LoadProgram(0, program.get(), {});
  auto in = driver_->Allocate(0, tpu_driver::HBM, 4, {});
  auto out = driver_->Allocate(0, tpu_driver::HBM, 4, {});
  xla::DeviceAssignmentProto assignment;
  assignment.set_replica_count(1);
  assignment.set_computation_count(1);
  assignment.add_computation_devices()->add_replica_device_ids(0);
  EXPECT_TRUE(driver_
                  ->ExecuteProgram(loaded.get(), {in.get()}, {out.get()},
                                   assignment, {})
                  ->Await()
                  .ok());
  StreamRequest::Entry execute = worker_->Received(4);
  EXPECT_EQ(execute.execute().loaded_program_handle(), Wire(2));
  EXPECT_EQ(execute.execute().input_handle(0), Wire(3));
  EXPECT_EQ(execute.execute().output_handle(0), Wire(4));
  EXPECT_EQ(execute.execute().device_assignment().replica_count(), 1);
}

TEST_F(StreamDriverTest, HandlesOfAnotherDriverAreInvalidArgument) {
  SetAutoRespond();
  // Same fake worker, same client id: only the driver instance differs, as
  // after a server restart that handed out the id again.
  auto other = Open(worker_);
  auto foreign = other->Allocate(0, tpu_driver::HBM, 4, {});
  char data[4] = {};
  absl::Status status =
      driver_->TransferToDevice(data, foreign.get(), {})->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("another TPU driver"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("stale handle"), std::string::npos);

  auto program = other->CompileProgram(xla::HloProto(), 1, {});
  auto loaded = driver_->LoadProgram(0, program.get(), {});
  EXPECT_EQ(loaded->OnReady()->Await().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(driver_->Deallocate(std::move(foreign), {})->Await().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(StreamDriverTest, UnknownCoreIsInvalidArgument) {
  auto buffer = driver_->Allocate(7, tpu_driver::HBM, 4, {});
  absl::Status status = buffer->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("core 7 does not exist"), std::string::npos)
      << status;
  EXPECT_EQ(worker_->NumReceived(), 0);
}

TEST_F(StreamDriverTest, ForeignEventsAreWaitedForOnTheClient) {
  SetAutoRespond();
  auto gate = std::make_shared<CompletionEvent>(EventId{9, 9}, 0);
  auto held = driver_->Allocate(0, tpu_driver::HBM, 4, {gate.get()});
  // Names a held handle: must be held too, not sent ahead of its creator.
  char data[4] = {1, 2, 3, 4};
  auto to = driver_->TransferToDevice(data, held.get(), {});
  EXPECT_EQ(worker_->NumReceived(), 0);
  gate->Complete(absl::OkStatus());
  EXPECT_TRUE(held->OnReady()->Await().ok());
  EXPECT_TRUE(to->Await().ok());
  EXPECT_EQ(worker_->Received(0).operation_id(), Wire(1));
  EXPECT_EQ(worker_->Received(1).operation_id(), Wire(2));

  auto failing = std::make_shared<CompletionEvent>(EventId{9, 10}, 0);
  auto never = driver_->Allocate(0, tpu_driver::HBM, 4, {failing.get()});
  failing->Complete(absl::AbortedError("upstream died"));
  absl::Status status = never->OnReady()->Await();
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted);
  EXPECT_NE(status.message().find("upstream died"), std::string::npos);
  EXPECT_EQ(worker_->NumReceived(), 2);
}

TEST_F(StreamDriverTest, BrokenStreamFailsEveryPendingEventNamingTheWorker) {
  auto a = driver_->Allocate(0, tpu_driver::HBM, 4, {});
  auto b = driver_->Allocate(1, tpu_driver::HBM, 4, {});
  ASSERT_TRUE(worker_->WaitReceived(2));
  worker_->BreakAll(absl::UnavailableError("Socket closed"));
  for (auto* buffer : {a.get(), b.get()}) {
    absl::Status status = buffer->OnReady()->Await();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(status.message().find("fake://w went away"), std::string::npos)
        << status;
  }
  // Later operations fail at once too.
  auto c = driver_->Allocate(0, tpu_driver::HBM, 4, {});
  EXPECT_EQ(c->OnReady()->Await().code(), absl::StatusCode::kUnavailable);
}

TEST_F(StreamDriverTest, DestructionFailsPendingAbortedAndCloses) {
  auto a = driver_->Allocate(0, tpu_driver::HBM, 4, {});
  std::shared_ptr<Event> ready = a->OnReady();
  ASSERT_TRUE(worker_->WaitReceived(1));
  driver_.reset();
  EXPECT_EQ(ready->Await().code(), absl::StatusCode::kAborted);
  absl::MutexLock lock(&worker_->mu);
  EXPECT_EQ(worker_->closed, std::vector<uint32_t>({kClientId}));
}

TEST_F(StreamDriverTest, ResetThenClosesAndReturnsClosesStatus) {
  {
    absl::MutexLock lock(&worker_->mu);
    worker_->close_status = absl::InternalError("close failed");
  }
  EXPECT_EQ(driver_->Reset(), absl::InternalError("close failed"));
  {
    absl::MutexLock lock(&worker_->mu);
    EXPECT_EQ(worker_->resets, 1);
    EXPECT_EQ(worker_->closed, std::vector<uint32_t>({kClientId}));
  }
  auto after = driver_->Allocate(0, tpu_driver::HBM, 4, {});
  EXPECT_EQ(after->OnReady()->Await().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(driver_->QuerySystemInfo().status().code(),
            absl::StatusCode::kFailedPrecondition);
  driver_.reset();  // No second Close.
  absl::MutexLock lock(&worker_->mu);
  EXPECT_EQ(worker_->closed.size(), 1);
}

TEST_F(StreamDriverTest, WritesAreBatched) {
  {
    absl::MutexLock lock(&worker_->mu);
    worker_->block_writes = true;
  }
  std::vector<std::unique_ptr<BufferHandle>> buffers;
  for (int i = 0; i < 100; ++i) {
    buffers.push_back(driver_->Allocate(0, tpu_driver::HBM, 4, {}));
  }
  {
    absl::MutexLock lock(&worker_->mu);
    worker_->block_writes = false;
  }
  ASSERT_TRUE(worker_->WaitReceived(100));
  absl::MutexLock lock(&worker_->mu);
  // The writer took the first entry (or a few) before it blocked; the rest
  // queued up behind it and went out together.
  EXPECT_LE(worker_->writes, 3);
}

TEST_F(StreamDriverTest, ConcurrentIssuersAllComplete) {
  SetAutoRespond(std::string(4, 'x'));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto buffer = driver_->Allocate(t % 2, tpu_driver::HBM, 4, {});
        char out[4];
        if (driver_->TransferFromDevice(buffer.get(), out, {})->Await().ok() &&
            std::memcmp(out, "xxxx", 4) == 0) {
          ++ok;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 200);
}

}  // namespace
}  // namespace tpu::driver
