// A 64 MiB f32 all-reduce across the workers of a pod slice on loopback,
// reported as nccl-tests does (algorithm bandwidth = bytes / time, bus
// bandwidth = algbw * 2(n-1)/n), beside loopback TCP throughput measured in
// the same run: a plain connected socket pair on 127.0.0.1 moving the same
// 64 MiB from one thread to another.
//
//   bazel build //emulator/service:pod_collective_benchmark
//   bazel-bin/emulator/service/pod_collective_benchmark
//
// Two in-process workers, each a CollectiveHub with its Peer service on a
// loopback port and a GrpcPeerLink to the other (the path tpu_emulator
// --pod_addresses takes). BM_PodAllReduce64MiB/C has C cores per worker:
// /1 is 2 replicas (one per worker), /4 is 8 replicas (4 per worker).
// Counters: busbw_GBps, tcp_GBps, busbw_over_tcp.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "emulator/collectives/collective_hub.h"
#include "emulator/interpreter/executable.h"
#include "emulator/service/grpc_peer_link.h"
#include "emulator/service/peer_service.h"
#include "grpcpp/grpcpp.h"
#include "hlo/host_memory.h"
#include "hlo/text/hlo_parser.h"

namespace tpu::emulator {
namespace {

constexpr int kWorkers = 2;
constexpr int64_t kBytes = int64_t{64} << 20;

// The hubs need their link before the servers (and so the ports, which the
// link needs) exist: this one forwards once the real link is set.
class ForwardingPeerLink : public PeerLink {
 public:
  void Set(std::shared_ptr<PeerLink> target) {
    absl::MutexLock lock(&mu_);
    target_ = std::move(target);
  }
  int host_count() const override { return kWorkers; }
  std::string Address(int host) const override {
    return Target()->Address(host);
  }
  absl::StatusOr<Literal> Contribute(
      int host, const tpu_emulator::Contribution& arrival,
      const std::atomic<bool>* cancelled) override {
    return Target()->Contribute(host, arrival, cancelled);
  }
  absl::Status Deliver(int host, const std::string& meeting,
                       const absl::StatusOr<Literal>& result) override {
    return Target()->Deliver(host, meeting, result);
  }
  absl::Status Ping(int host) override { return Target()->Ping(host); }
  absl::StatusOr<tpu_emulator::PeerWaitReport> LocalWaitReport(
      int host, int history) override {
    return Target()->LocalWaitReport(host, history);
  }

 private:
  std::shared_ptr<PeerLink> Target() const {
    absl::MutexLock lock(&mu_);
    return target_;
  }
  mutable absl::Mutex mu_;
  std::shared_ptr<PeerLink> target_ ABSL_GUARDED_BY(mu_);
};

// Two workers of one slice, linked over loopback gRPC.
struct Slice {
  explicit Slice(int cores_per_worker) {
    for (int h = 0; h < kWorkers; ++h) {
      links.push_back(std::make_shared<ForwardingPeerLink>());
      CollectiveHubOptions options;
      for (int c = 0; c < cores_per_worker; ++c) {
        options.cores.push_back(h * cores_per_worker + c);
      }
      options.host_id = h;
      options.peers = links.back();
      options.report_waits_after = absl::ZeroDuration();
      hubs.push_back(std::make_unique<CollectiveHub>(options));
      services.push_back(std::make_unique<PeerService>(hubs.back().get(), h));
      grpc::ServerBuilder builder;
      int port = 0;
      builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                               &port);
      builder.RegisterService(services.back().get());
      builder.SetMaxReceiveMessageSize(INT_MAX);
      builder.SetMaxSendMessageSize(INT_MAX);
      servers.push_back(builder.BuildAndStart());
      addresses.push_back(absl::StrCat("127.0.0.1:", port));
    }
    for (int h = 0; h < kWorkers; ++h) {
      auto link = GrpcPeerLink::Create(addresses, h);
      if (link.ok()) links[h]->Set(*std::move(link));
    }
  }
  ~Slice() {
    for (auto& server : servers) server->Shutdown();
  }
  std::vector<std::shared_ptr<ForwardingPeerLink>> links;
  std::vector<std::unique_ptr<CollectiveHub>> hubs;
  std::vector<std::unique_ptr<PeerService>> services;
  std::vector<std::unique_ptr<grpc::Server>> servers;
  std::vector<std::string> addresses;
};

// Seconds to move `bytes` through a warm loopback TCP connection, writer and
// reader on their own threads. The first transfer on a fresh connection runs
// at a tenth of the rate while the kernel grows its windows and buffers
// (0.3 against 2.6-2.8 GB/s here), and the peer link's channel is long warm:
// so the same bytes cross once untimed first.
double TcpSeconds(int64_t bytes) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) !=
          0) {
    close(listener);
    return -1;
  }
  const int writer = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(writer, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    close(writer);
    close(listener);
    return -1;
  }
  const int reader = accept(listener, nullptr, nullptr);
  std::vector<char> out(bytes, 1), in(bytes);
  double seconds = -1;
  for (int pass = 0; pass < 2; ++pass) {  // the first one warms up
    const absl::Time start = absl::Now();
    std::thread send_thread([&] {
      for (int64_t sent = 0; sent < bytes;) {
        const ssize_t n = send(writer, out.data() + sent, bytes - sent, 0);
        if (n <= 0) return;
        sent += n;
      }
    });
    int64_t got = 0;
    while (got < bytes) {
      const ssize_t n = recv(reader, in.data() + got, bytes - got, 0);
      if (n <= 0) break;
      got += n;
    }
    send_thread.join();
    seconds = got == bytes ? absl::ToDoubleSeconds(absl::Now() - start) : -1;
  }
  close(reader);
  close(writer);
  close(listener);
  return seconds;
}

void BM_PodAllReduce64MiB(benchmark::State& state) {
  const int per_worker = static_cast<int>(state.range(0));
  const int n = kWorkers * per_worker;
  const int64_t elements = kBytes / 4;
  auto module = hlo::ParseHloModule(
      absl::StrCat(R"(
HloModule allreduce
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  p = f32[)",
                   elements, R"(] parameter(0)
  ROOT s = f32[)",
                   elements,
                   R"(] all-reduce(p), replica_groups={}, to_apply=sum
})"));
  interpreter::CompileOptions compile;
  compile.num_replicas = n;
  auto executable =
      module.ok() ? interpreter::Executable::Compile(*module, compile)
                  : absl::StatusOr<std::unique_ptr<interpreter::Executable>>(
                        module.status());
  if (!executable.ok()) {
    state.SkipWithError("compile failed");
    return;
  }
  std::vector<Literal> inputs;
  for (int c = 0; c < n; ++c) {
    Literal input = Literal::Uninitialized(Shape::Array(xla::F32, {elements}));
    float* data = input.mutable_data<float>().data();
    for (int64_t i = 0; i < elements; ++i) {
      data[i] = static_cast<float>(c + i % 7);
    }
    inputs.push_back(std::move(input));
  }
  Slice slice(per_worker);
  std::vector<int> devices;
  for (int c = 0; c < n; ++c) devices.push_back(c);
  interpreter::DeviceAssignment assignment;
  assignment.num_replicas = n;
  assignment.devices = devices;
  bool failed = false;
  auto run = [&] {
    const absl::Time start = absl::Now();
    std::vector<std::thread> threads;
    std::vector<absl::Status> status(n);
    for (int c = 0; c < n; ++c) {
      threads.emplace_back([&, c] {
        LaunchInfo info;
        info.core = c;
        info.program = "bench";
        info.fingerprint = "bench";
        info.assignment = devices;
        auto launch = slice.hubs[c / per_worker]->BeginLaunch(info);
        if (!launch.ok()) {
          status[c] = launch.status();
          return;
        }
        interpreter::ExecutionContext context;
        context.replica_id = c;
        context.assignment = &assignment;
        context.collectives = launch->get();
        status[c] =
            (*executable)->Execute({inputs[c]}, context, nullptr).status();
      });
    }
    for (auto& t : threads) t.join();
    for (const absl::Status& s : status) failed = failed || !s.ok();
    return absl::ToDoubleSeconds(absl::Now() - start);
  };
  run();  // connects the channels and faults in the heap pages
  double collective = 0, tcp = 0;
  for (auto _ : state) {
    const double seconds = run();
    state.SetIterationTime(seconds);
    collective += seconds;
    tcp += TcpSeconds(kBytes);
  }
  if (failed || tcp <= 0) {
    state.SkipWithError("the all-reduce or the TCP baseline failed");
    return;
  }
  const double bytes = static_cast<double>(kBytes) * state.iterations();
  const double busbw = bytes / collective * 2.0 * (n - 1) / n;
  state.counters["algbw_GBps"] = bytes / collective / 1e9;
  state.counters["busbw_GBps"] = busbw / 1e9;
  state.counters["tcp_GBps"] = bytes / tcp / 1e9;
  state.counters["busbw_over_tcp"] = busbw / (bytes / tcp);
}
// A few iterations each: one takes seconds, and one alone is noise on a
// shared machine.
BENCHMARK(BM_PodAllReduce64MiB)
    ->Arg(1)
    ->Arg(4)
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tpu::emulator

int main(int argc, char** argv) {
  // As tpu_emulator: without absl's debug lock-order graph, which Debian's
  // absl keeps on and which costs every lock of the hub and the fibers.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  tpu::ConfigureHostMemoryForLargeBuffers();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
