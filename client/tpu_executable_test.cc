#include "client/tpu_executable.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "driver/testing/fake_driver.h"
#include "gtest/gtest.h"

namespace tpu::client {
namespace {

using driver::testing::FakeWorker;
using driver::testing::FakeWorkerOptions;
using driver::testing::ModuleWithSignature;

const Shape kF32x2 = Shape::Array(xla::F32, {2});
const Shape kS32 = Shape::Array(xla::S32, {});

Literal F32(std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Literal::FromVector<float>(xla::F32, {n}, values);
}

// out[i] = sum over arguments of arg[i] + 1, for f32 leaves.
absl::Status AddPlusOne(const std::vector<Literal>& args,
                        std::vector<Literal>* outputs) {
  for (Literal& out : *outputs) {
    absl::Span<float> o = out.mutable_data<float>();
    for (int64_t i = 0; i < static_cast<int64_t>(o.size()); ++i) {
      float sum = 1.0f;
      for (const Literal& a : args) sum += a.data<float>()[i];
      o[i] = sum;
    }
  }
  return absl::OkStatus();
}

class TpuExecutableTest : public ::testing::Test {
 protected:
  void MakeClient(ClientOptions options = {}) {
    FakeWorkerOptions topology;
    topology.chips = 4;
    topology.cores_per_chip = 2;
    worker_ = FakeWorker::Create(topology);
    client_ = *TpuClient::Create(worker_->NewDriver(), options);
  }
  void SetUp() override { MakeClient(); }

  std::unique_ptr<TpuBuffer> Upload(const Literal& literal, int device = 0) {
    return *TpuBuffer::FromLiteral(literal, client_, device);
  }

  std::shared_ptr<FakeWorker> worker_;
  std::shared_ptr<TpuClient> client_;
};

TEST_F(TpuExecutableTest, CompileAndExecuteOneReplica) {
  worker_->set_executor(AddPlusOne);
  absl::StatusOr<std::unique_ptr<TpuExecutable>> executable =
      TpuExecutable::Compile(ModuleWithSignature({kF32x2, kF32x2}, kF32x2), {},
                             client_);
  ASSERT_TRUE(executable.ok()) << executable.status();
  EXPECT_EQ(worker_->last_num_replicas(), 1);
  EXPECT_EQ(worker_->live_loaded_programs(), 1);
  EXPECT_EQ((*executable)->result_shape(), kF32x2);
  ASSERT_EQ((*executable)->parameter_shapes().size(), 2u);

  auto a = Upload(F32({1, 2}));
  auto b = Upload(F32({10, 20}));
  std::vector<TpuBuffer*> args = {a.get(), b.get()};
  absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> result =
      (*executable)->Execute(args);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->size(), 1u);
  EXPECT_EQ(*(*result)[0]->ToLiteral(), F32({12, 23}));

  std::optional<xla::DeviceAssignmentProto> assignment =
      worker_->last_assignment();
  ASSERT_TRUE(assignment.has_value());
  EXPECT_EQ(assignment->replica_count(), 1);
  EXPECT_EQ(assignment->computation_count(), 1);
  EXPECT_EQ(assignment->computation_devices(0).replica_device_ids(0), 0);

  executable->reset();
  EXPECT_EQ(worker_->live_loaded_programs(), 0);
}

TEST_F(TpuExecutableTest, TupleResultsAreDestructured) {
  worker_->set_executor(AddPlusOne);
  auto executable = *TpuExecutable::Compile(
      ModuleWithSignature({kF32x2}, Shape::Tuple({kF32x2, kF32x2})), {},
      client_);
  auto a = Upload(F32({1, 2}));
  std::vector<TpuBuffer*> args = {a.get()};
  auto result = *executable->Execute(args);
  ASSERT_EQ(result.size(), 2u);
  EXPECT_EQ(*result[1]->ToLiteral(), F32({2, 3}));
}

TEST_F(TpuExecutableTest, TupleArgumentsArePacked) {
  worker_->set_executor(AddPlusOne);
  CompileOptions options;
  options.tuple_arguments = true;
  auto executable = *TpuExecutable::Compile(
      ModuleWithSignature({Shape::Tuple({kF32x2, kF32x2})}, kF32x2), options,
      client_);
  auto a = Upload(F32({1, 2}));
  auto b = Upload(F32({3, 4}));
  std::vector<TpuBuffer*> args = {a.get(), b.get()};
  auto result = executable->Execute(args);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*(*result)[0]->ToLiteral(), F32({5, 7}));
}

TEST_F(TpuExecutableTest, ArgumentChecks) {
  worker_->set_executor(AddPlusOne);
  auto executable = *TpuExecutable::Compile(
      ModuleWithSignature({kF32x2}, kF32x2), {}, client_);
  auto good = Upload(F32({1, 2}));
  auto wrong_shape = Upload(F32({1, 2, 3}));
  auto elsewhere = Upload(F32({1, 2}), 5);
  auto deleted = Upload(F32({1, 2}));
  deleted->Delete();

  auto expect = [&](std::vector<TpuBuffer*> args, absl::string_view what) {
    absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> result =
        executable->Execute(args);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(result.status().message(), what))
        << result.status();
  };
  expect({}, "replica 0 got 0 arguments but the program takes 1");
  expect({good.get(), good.get()}, "got 2 arguments");
  expect({wrong_shape.get()},
         "argument 0 of replica 0 has shape f32[3] but the program expects "
         "f32[2]");
  expect({elsewhere.get()}, "argument 0 of replica 0 is on TPU_5");
  expect({deleted.get()}, "argument 0 of replica 0 is a deleted buffer");
  EXPECT_TRUE(worker_->executed_cores().empty());
}

TEST_F(TpuExecutableTest, ExecutePerReplicaRunsEveryReplica) {
  // Each replica adds one to its own input.
  worker_->set_executor(AddPlusOne);
  CompileOptions options;
  options.num_replicas = 8;
  auto executable = *TpuExecutable::Compile(
      ModuleWithSignature({kF32x2}, kF32x2), options, client_);
  EXPECT_EQ(worker_->last_num_replicas(), 8);
  EXPECT_EQ(worker_->live_loaded_programs(), 8);
  ASSERT_EQ(executable->local_devices().size(), 8u);

  std::vector<std::unique_ptr<TpuBuffer>> inputs;
  std::vector<std::vector<TpuBuffer*>> args;
  for (int r = 0; r < 8; ++r) {
    inputs.push_back(Upload(F32({float(r), float(-r)}), r));
    args.push_back({inputs.back().get()});
  }
  absl::StatusOr<std::vector<std::vector<std::unique_ptr<TpuBuffer>>>> results =
      executable->ExecutePerReplica(args);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 8u);
  for (int r = 0; r < 8; ++r) {
    ASSERT_EQ((*results)[r].size(), 1u);
    EXPECT_EQ((*results)[r][0]->device()->id(), r);
    EXPECT_EQ(*(*results)[r][0]->ToLiteral(), F32({r + 1.0f, 1.0f - r}));
  }
  std::vector<int32_t> cores = worker_->executed_cores();
  std::sort(cores.begin(), cores.end());
  EXPECT_EQ(cores, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(worker_->last_assignment()->replica_count(), 8);

  // Execute is for single-replica programs.
  absl::StatusOr<std::vector<std::unique_ptr<TpuBuffer>>> single =
      executable->Execute(args[0]);
  EXPECT_EQ(single.status().message(),
            "Attempted to execute computation with 8 replicas using "
            "Execute().");
  // One argument list per local device.
  args.pop_back();
  results = executable->ExecutePerReplica(args);
  EXPECT_EQ(results.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(results.status().message(),
            "Attempted to execute with 7 argument lists when local device "
            "count is 8 (total replica count: 8, partition count: 1).");
}

TEST_F(TpuExecutableTest, ExecutePerReplicaReportsTheFirstFailingReplica) {
  worker_->set_executor([](const std::vector<Literal>& args,
                           std::vector<Literal>*) -> absl::Status {
    const float v = args[0].data<float>()[0];
    if (v >= 2) {
      return absl::InternalError(absl::StrCat("replica with input ", v));
    }
    return absl::OkStatus();
  });
  CompileOptions options;
  options.num_replicas = 4;
  auto executable = *TpuExecutable::Compile(
      ModuleWithSignature({kF32x2}, kF32x2), options, client_);
  std::vector<std::unique_ptr<TpuBuffer>> inputs;
  std::vector<std::vector<TpuBuffer*>> args;
  for (int r = 0; r < 4; ++r) {
    inputs.push_back(Upload(F32({float(r), 0}), r));
    args.push_back({inputs.back().get()});
  }
  auto results = executable->ExecutePerReplica(args);
  EXPECT_EQ(results.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(results.status().message(), "replica with input 2");
}

TEST_F(TpuExecutableTest, CompileChecksTheDeviceAssignment) {
  const xla::HloModuleProto module = ModuleWithSignature({kF32x2}, kF32x2);
  CompileOptions options;
  options.num_replicas = 2;
  options.device_assignment = DeviceAssignment(3, 1);
  auto got = TpuExecutable::Compile(module, options, client_);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(),
            "Mismatched number of replicas for device assignment and "
            "computation (3 vs 2).");

  options.device_assignment = DeviceAssignment(2, 2);
  got = TpuExecutable::Compile(module, options, client_);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(got.status().message(),
            "Only 1 computation per replica supported, 2 requested.");

  options.device_assignment.reset();
  options.num_partitions = 2;
  got = TpuExecutable::Compile(module, options, client_);
  EXPECT_EQ(got.status().message(),
            "Num partitions greater than 1, is not supported.");

  // An explicit assignment: replica 0 on core 6, replica 1 on core 2.
  DeviceAssignment assignment(2, 1);
  assignment(0, 0) = 6;
  assignment(1, 0) = 2;
  options.num_partitions = 1;
  options.device_assignment = assignment;
  got = TpuExecutable::Compile(module, options, client_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)->local_devices()[0]->id(), 6);
  EXPECT_EQ((*got)->local_devices()[1]->id(), 2);

  assignment(1, 0) = 99;
  options.device_assignment = assignment;
  got = TpuExecutable::Compile(module, options, client_);
  EXPECT_EQ(got.status().message(),
            "TpuExecutable::Compile got bad device_id: 99 (num_devices=8).");

  options.device_assignment.reset();
  options.num_replicas = 0;
  EXPECT_EQ(TpuExecutable::Compile(module, options, client_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(TpuExecutableTest, CompileErrorsComeFromTheDriver) {
  xla::HloModuleProto module;  // no entry computation
  auto got = TpuExecutable::Compile(module, {}, client_);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(), "the module has no entry computation");
}

TEST_F(TpuExecutableTest, ExecutionFailureIsReturned) {
  worker_->set_executor([](const std::vector<Literal>&, std::vector<Literal>*) {
    return absl::ResourceExhaustedError("out of HBM");
  });
  auto executable =
      *TpuExecutable::Compile(ModuleWithSignature({}, kS32), {}, client_);
  auto result = executable->Execute({});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(result.status().message(), "out of HBM");
}

TEST_F(TpuExecutableTest, DeadlineWarnsThenGivesUp) {
  absl::Mutex mu;
  std::vector<std::string> warnings;
  ClientOptions options;
  options.execute_warn_interval = absl::Milliseconds(5);
  options.execute_max_time = absl::Milliseconds(40);
  options.warning_handler = [&](absl::string_view line) {
    absl::MutexLock lock(&mu);
    warnings.emplace_back(line);
  };
  MakeClient(options);
  worker_->set_executor(AddPlusOne);
  worker_->HoldExecutions();
  auto executable = *TpuExecutable::Compile(
      ModuleWithSignature({kF32x2}, kF32x2), {}, client_);
  auto a = Upload(F32({1, 2}));
  std::vector<TpuBuffer*> args = {a.get()};
  auto result = executable->Execute(args);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(result.status().message(),
            "TPU program took more than 0 seconds to complete.");
  {
    absl::MutexLock lock(&mu);
    ASSERT_FALSE(warnings.empty());
    EXPECT_EQ(warnings[0],
              "TPU Execute is taking a long time. This might be due to a "
              "deadlock between multiple TPU cores or a very slow program.");
  }
  // The program still holds its input: releasing the buffer waits for it.
  const int live = worker_->live_buffers();
  a.reset();
  EXPECT_EQ(worker_->live_buffers(), live);
  worker_->Release();
  EXPECT_LT(worker_->live_buffers(), live);
}

TEST_F(TpuExecutableTest, DeleteUnloadsAndRefusesLaterExecutions) {
  worker_->set_executor(AddPlusOne);
  auto executable =
      *TpuExecutable::Compile(ModuleWithSignature({}, kF32x2), {}, client_);
  EXPECT_EQ(worker_->live_loaded_programs(), 1);
  executable->Delete();
  EXPECT_EQ(worker_->live_loaded_programs(), 0);
  auto result = executable->Execute({});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tpu::client
