// tpu_emulator: serves the tpu_driver.CloudTpuDriver protocol as a Cloud TPU
// worker does, with HLO programs run by the interpreter on this host's CPUs.
//
//   tpu_emulator [--port=8470] [--bind=127.0.0.1] [--port_file=PATH]
//                [--tls_cert=PEM --tls_key=PEM [--tls_client_ca=PEM]]
//                [--allow_insecure_remote] [--unix_socket=PATH]
//                [--chips=4] [--cores_per_chip=2] [--hbm_bytes_per_core=N]
//                [--pod_hosts=1] [--host_id=0] [--tpu_numerics=false]
//                [--max_idle_time_seconds=3600] [--compute_threads=0]
//                [--unknown_handle_wait_ms=5000] [--report_waits_after=10s]
//                [--launch_barrier] [--record_dir=DIR] [--fault='RULE']...
//                [--fault_plan=FILE] [--trace_out=FILE [--trace_instructions]]
//                [--profile_programs] [--host_memory_budget=SIZE]
//                [--max_handles_per_client=N]
//                [--max_pending_operations_per_client=N]
//                [--max_bytes_in_flight_per_client=SIZE]
//
// Prints "tpu_emulator listening on HOST:PORT" (plus " (TLS)" or " (mutual
// TLS)", and " and unix:PATH" with --unix_socket) once it serves (and writes
// PORT to --port_file). SIGINT/SIGTERM shut it down gracefully (exit 0),
// writing the trace to --trace_out first (unless `tpu_ctl trace stop` took
// it).

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "emulator/faults/fault_plan.h"
#include "emulator/faults/fault_plan_file.h"
#include "emulator/service/server.h"
#include "emulator/worker/host_memory_budget.h"
#include "hlo/host_memory.h"
#include "tools/lib/repeated_flag.h"

ABSL_FLAG(int, port, 8470, "Port to listen on; 0 picks a free port.");
ABSL_FLAG(std::string, bind, "127.0.0.1",
          "Address to listen on. Other than loopback it needs --tls_cert and "
          "--tls_key, or --allow_insecure_remote.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain: serve TLS (clients dial grpcs://).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificates: require clients to present a certificate "
          "they signed (mutual TLS).");
ABSL_FLAG(std::string, unix_socket, "",
          "Also listen on this Unix domain socket (clients dial "
          "grpc://unix:PATH): the same protocol without TCP, for clients on "
          "this machine.");
ABSL_FLAG(bool, allow_insecure_remote, false,
          "Serve plaintext on a non-loopback --bind (only on a network you "
          "trust: anyone who connects can run programs and read memory).");
ABSL_FLAG(std::string, port_file, "",
          "If set, the chosen port is written here once the server is ready.");
ABSL_FLAG(int, chips, 4, "TPU chips this worker serves.");
ABSL_FLAG(int, cores_per_chip, 2, "TPU cores per chip.");
ABSL_FLAG(int64_t, hbm_bytes_per_core, int64_t{16} << 30,
          "HBM capacity of each core (accounting; not committed up front).");
ABSL_FLAG(int, pod_hosts, 1,
          "Hosts in the pod slice this worker is part of (1: a lone worker).");
ABSL_FLAG(int, host_id, 0, "This worker's host id within the pod slice.");
ABSL_FLAG(std::vector<std::string>, pod_addresses, {},
          "host:port of every host of the pod slice, in host id order (this "
          "worker's own included): collectives whose groups span workers "
          "meet through them. Empty: collectives stay within this worker.");
ABSL_FLAG(bool, tpu_numerics, false,
          "Compute f32 matrix products with DEFAULT precision as a TPU does.");
ABSL_FLAG(int, max_idle_time_seconds, 3600,
          "Seconds an idle client keeps its resources.");
ABSL_FLAG(int, compute_threads, 0,
          "Threads of the shared Eigen pool that runs kernels; 0 = one per "
          "CPU.");
ABSL_FLAG(absl::Duration, report_waits_after, absl::Seconds(10),
          "Log the wait report (who waits for whom) once a core has waited "
          "this long in a collective; 0 disables it. Collectives never time "
          "out, as on a TPU.");
ABSL_FLAG(bool, launch_barrier, false,
          "Check at launch that every core of a multi-core device assignment "
          "starts the same program for the same launch, and fail them all "
          "with FAILED_PRECONDITION otherwise (TPU's launch barrier).");
ABSL_FLAG(std::string, record_dir, "",
          "Record every client's session in this existing directory, one "
          "file per session (client<C>_session<N>.log, with its .results), "
          "for tpu_replay.");
ABSL_FLAG(std::string, trace_out, "",
          "Record a timeline from the start and write it here as Chrome "
          "trace-event JSON on shutdown (SIGINT/SIGTERM); open it in "
          "https://ui.perfetto.dev.");
ABSL_FLAG(bool, trace_instructions, false,
          "With --trace_out: also record every top-level instruction.");
ABSL_FLAG(bool, profile_programs, false,
          "Time every top-level instruction per compiled program (tpu_ctl "
          "profile PROGRAM).");
ABSL_FLAG(int64_t, unknown_handle_wait_ms, 5000,
          "Milliseconds an operation waits for a handle or event whose "
          "operation has not arrived yet, before failing NOT_FOUND.");

ABSL_FLAG(std::string, fault, "",
          "A fault rule, e.g. 'execute core=1 nth=1 delay=200ms' (see the "
          "README's fault grammar). Repeatable: every --fault adds a rule. A "
          "rule that does not parse stops the worker from starting.");
ABSL_FLAG(std::string, fault_plan, "",
          "A file of fault rules, one per line ('#' starts a comment line); "
          "its rules come after the --fault ones.");
ABSL_FLAG(std::string, host_memory_budget, "",
          "Host memory all buffers of the worker may commit (e.g. 8GiB, "
          "512MiB); an operation that would pass it fails RESOURCE_EXHAUSTED. "
          "Default: half of this machine's memory.");
ABSL_FLAG(int64_t, max_handles_per_client, int64_t{1} << 20,
          "Live buffers and programs one client may hold; 0 = no limit.");
ABSL_FLAG(int64_t, max_pending_operations_per_client, int64_t{1} << 18,
          "Operations one client may have sent and not had answered; 0 = no "
          "limit.");
ABSL_FLAG(std::string, max_bytes_in_flight_per_client, "4GiB",
          "transfer_to bytes one client may have received and not yet "
          "stored; 0 = no limit.");

namespace {

int Fail(const std::string& message) {
  fprintf(stderr, "tpu_emulator: %s\n", message.c_str());
  return 2;
}

// Written to a temporary file and renamed, so a reader never sees a partial
// port number.
absl::Status WritePortFile(const std::string& path, int port) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    out.close();
    if (!out) {
      return absl::UnavailableError(
          absl::StrCat("cannot write the port file ", tmp));
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot create the port file ", path));
  }
  return absl::OkStatus();
}

// The trace recorded since the start, unless `tpu_ctl trace stop` took it.
absl::Status WriteTrace(tpu::emulator::Worker& worker,
                        const std::string& path) {
  absl::StatusOr<std::string> json = worker.StopTrace();
  if (!json.ok()) {
    fprintf(stderr, "tpu_emulator: no trace to write to %s: %s\n", path.c_str(),
            std::string(json.status().message()).c_str());
    return absl::OkStatus();
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(json->data(), static_cast<std::streamsize>(json->size()));
  out.close();
  if (!out) {
    return absl::UnavailableError(
        absl::StrCat("cannot write the trace to ", path, " (--trace_out)"));
  }
  fprintf(stderr, "tpu_emulator: wrote the trace to %s\n", path.c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's absl is built with its debug checks: every lock would also
  // update a process-wide lock-order graph. Tests keep them; users' runs
  // do not pay for them.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  tpu::ConfigureHostMemoryForLargeBuffers();
  absl::SetProgramUsageMessage(
      "Serves the tpu_driver.CloudTpuDriver protocol as an emulated TPU "
      "worker.\nUsage: tpu_emulator [--port=8470] [--bind=127.0.0.1] "
      "[--port_file=PATH] [--tls_cert=PEM --tls_key=PEM "
      "[--tls_client_ca=PEM]] [--allow_insecure_remote] "
      "[--unix_socket=PATH] [--chips=4] "
      "[--cores_per_chip=2] "
      "[--hbm_bytes_per_core=N] [--pod_hosts=1] [--host_id=0] "
      "[--pod_addresses=H0:P0,H1:P1,...] "
      "[--tpu_numerics=false] [--max_idle_time_seconds=3600] "
      "[--compute_threads=0] [--unknown_handle_wait_ms=5000] "
      "[--report_waits_after=10s] [--launch_barrier] [--record_dir=DIR] "
      "[--fault='RULE']... [--fault_plan=FILE] "
      "[--trace_out=FILE [--trace_instructions]] [--profile_programs] "
      "[--host_memory_budget=SIZE] [--max_handles_per_client=N] "
      "[--max_pending_operations_per_client=N] "
      "[--max_bytes_in_flight_per_client=SIZE]");
  const std::vector<std::string> fault_rules =
      tpu::tools::TakeRepeatedFlag("fault", &argc, argv);
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    return Fail(
        absl::StrCat("unexpected argument '", positional[1], "'; see --help."));
  }

  // Block the shutdown signals in every thread (the server's threads inherit
  // the mask) so that only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  tpu::emulator::ServerOptions options;
  options.port = absl::GetFlag(FLAGS_port);
  options.bind = absl::GetFlag(FLAGS_bind);
  options.tls.cert_path = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key_path = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca_path = absl::GetFlag(FLAGS_tls_client_ca);
  options.allow_insecure_remote = absl::GetFlag(FLAGS_allow_insecure_remote);
  options.unix_socket = absl::GetFlag(FLAGS_unix_socket);
  options.record_dir = absl::GetFlag(FLAGS_record_dir);
  options.worker.chips = absl::GetFlag(FLAGS_chips);
  options.worker.cores_per_chip = absl::GetFlag(FLAGS_cores_per_chip);
  options.worker.hbm_bytes_per_core = absl::GetFlag(FLAGS_hbm_bytes_per_core);
  options.worker.pod_hosts = absl::GetFlag(FLAGS_pod_hosts);
  options.worker.host_id = absl::GetFlag(FLAGS_host_id);
  options.pod_addresses = absl::GetFlag(FLAGS_pod_addresses);
  options.worker.tpu_numerics = absl::GetFlag(FLAGS_tpu_numerics);
  options.worker.max_idle_time_seconds =
      absl::GetFlag(FLAGS_max_idle_time_seconds);
  options.worker.compute_threads = absl::GetFlag(FLAGS_compute_threads);
  options.worker.unknown_handle_wait_ms =
      absl::GetFlag(FLAGS_unknown_handle_wait_ms);
  options.worker.report_waits_after = absl::GetFlag(FLAGS_report_waits_after);
  options.worker.launch_barrier = absl::GetFlag(FLAGS_launch_barrier);
  auto plan = std::make_shared<tpu::emulator::faults::FaultPlan>();
  for (const std::string& rule : fault_rules) {
    absl::StatusOr<int> added = plan->Add(rule);
    if (!added.ok()) {
      return Fail(
          absl::StrCat("bad --fault='", rule, "': ", added.status().message()));
    }
  }
  if (const std::string path = absl::GetFlag(FLAGS_fault_plan); !path.empty()) {
    absl::Status loaded = tpu::emulator::faults::AddRulesFromFile(path, &*plan);
    if (!loaded.ok()) {
      return Fail(absl::StrCat("bad --fault_plan: ", loaded.message()));
    }
  }
  options.worker.fault_plan = plan;
  options.worker.profile_programs = absl::GetFlag(FLAGS_profile_programs);
  const std::string trace_out = absl::GetFlag(FLAGS_trace_out);
  const std::string budget = absl::GetFlag(FLAGS_host_memory_budget);
  if (budget.empty()) {
    options.worker.host_memory_budget =
        tpu::emulator::DefaultHostMemoryBudget();
  } else {
    absl::StatusOr<int64_t> bytes = tpu::emulator::ParseByteSize(budget);
    if (!bytes.ok()) {
      return Fail(
          absl::StrCat("--host_memory_budget: ", bytes.status().message()));
    }
    options.worker.host_memory_budget = *bytes;
  }
  options.worker.client_limits.max_handles =
      absl::GetFlag(FLAGS_max_handles_per_client);
  options.worker.client_limits.max_pending_operations =
      absl::GetFlag(FLAGS_max_pending_operations_per_client);
  const std::string in_flight =
      absl::GetFlag(FLAGS_max_bytes_in_flight_per_client);
  if (in_flight == "0") {
    options.worker.client_limits.max_bytes_in_flight = 0;
  } else {
    absl::StatusOr<int64_t> bytes = tpu::emulator::ParseByteSize(in_flight);
    if (!bytes.ok()) {
      return Fail(absl::StrCat("--max_bytes_in_flight_per_client: ",
                               bytes.status().message()));
    }
    options.worker.client_limits.max_bytes_in_flight = *bytes;
  }

  absl::StatusOr<std::unique_ptr<tpu::emulator::Server>> server =
      tpu::emulator::Server::Start(options);
  if (!server.ok()) return Fail(server.status().ToString());

  if (!trace_out.empty()) {
    absl::Status tracing = (*server)->worker()->StartTrace(
        absl::GetFlag(FLAGS_trace_instructions));
    if (!tracing.ok()) return Fail(tracing.ToString());
  }

  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty()) {
    absl::Status written = WritePortFile(port_file, (*server)->port());
    if (!written.ok()) return Fail(written.ToString());
  }
  const char* security = options.tls.cert_path.empty()        ? ""
                         : options.tls.client_ca_path.empty() ? " (TLS)"
                                                              : " (mutual TLS)";
  const std::string also_unix =
      options.unix_socket.empty()
          ? ""
          : absl::StrCat(" and unix:", options.unix_socket);
  printf("tpu_emulator listening on %s%s%s\n", (*server)->address().c_str(),
         security, also_unix.c_str());
  fflush(stdout);

  int received = 0;
  sigwait(&signals, &received);
  fprintf(stderr, "tpu_emulator: %s received, shutting down\n",
          received == SIGINT ? "SIGINT" : "SIGTERM");
  if (!trace_out.empty()) {
    // Before the shutdown cancels blocked cores: the trace shows them
    // blocked.
    absl::Status written = WriteTrace(*(*server)->worker(), trace_out);
    if (!written.ok())
      fprintf(stderr, "tpu_emulator: %s\n", written.ToString().c_str());
  }
  (*server)->Shutdown();
  server->reset();
  return 0;
}
