#include "tests/soak/soak.h"

#include <atomic>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "driver/driver_registry.h"
#include "driver/tpu_driver.h"
#include "emulator/worker/test_programs.h"
#include "proto/xla_data.pb.h"
#include "tools/lib/subprocess.h"

namespace tpu::tests {
namespace {

using driver::BufferHandle;
using driver::Event;
using driver::TpuDriver;

// An operation that is not answered within this bound counts as unanswered
// (the worker wedged); nothing in the soak should take more than a fraction.
constexpr absl::Duration kAnswerBound = absl::Seconds(120);
constexpr int64_t kProgramElements = 64;
constexpr int kMaxPending = 48;
constexpr int kMaxLiveBuffers = 24;

// "VmRSS:     1234 kB" -> 1234; -1 if absent.
int64_t StatusFieldKb(int pid, const std::string& field) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      return std::strtoll(line.c_str() + field.size() + 1, nullptr, 10);
    }
  }
  return -1;
}

xla::ShapeProto F32Shape(int64_t n) {
  xla::ShapeProto shape;
  shape.set_element_type(xla::F32);
  shape.add_dimensions(n);
  shape.mutable_layout()->add_minor_to_major(0);
  return shape;
}

// Tallies shared by all clients.
class Tally {
 public:
  void Add(const SoakReport& part) {
    absl::MutexLock lock(&mu_);
    report_.operations += part.operations;
    report_.answered += part.answered;
    report_.ok += part.ok;
    report_.aborted_by_disconnect += part.aborted_by_disconnect;
    report_.unexpected_errors += part.unexpected_errors;
    report_.bytes_checked += part.bytes_checked;
    report_.mismatched_reads += part.mismatched_reads;
    report_.disconnects += part.disconnects;
    for (const auto& e : part.errors) {
      if (report_.errors.size() < 10) report_.errors.push_back(e);
    }
  }
  SoakReport Get() {
    absl::MutexLock lock(&mu_);
    return report_;
  }

 private:
  absl::Mutex mu_;
  SoakReport report_ ABSL_GUARDED_BY(mu_);
};

// One client: a driver connection that it drops and reopens at random points,
// the buffers it holds, and its operations in flight.
class SoakClient {
 public:
  SoakClient(std::string address, const SoakOptions& options, int index)
      : address_(std::move(address)),
        options_(options),
        cores_(options.chips * options.cores_per_chip),
        rng_(options.seed * 7919 + index),
        name_(absl::StrCat("client ", index)) {}

  SoakReport Run(int ops) {
    const double disconnect_p =
        ops > 0 ? options_.disconnects_per_client / ops : 0;
    if (!Connect()) return report_;
    for (int i = 0; i < ops; ++i) {
      const int kind = static_cast<int>(rng_() % 100);
      if (live_.size() < 2 || kind < 25) {
        Alloc();
      } else if (kind < 50) {
        ReadBack();
      } else if (kind < 60) {
        CompileLoadUnload();
      } else if (kind < 80) {
        Execute();
      } else {
        Dealloc(rng_() % live_.size());
      }
      if (std::uniform_real_distribution<double>(0, 1)(rng_) < disconnect_p) {
        Disconnect();
        if (!Connect()) return report_;
      } else if (static_cast<int>(pending_.size()) > kMaxPending) {
        Drain();
      }
    }
    while (!live_.empty()) Dealloc(live_.size() - 1);
    for (auto& [core, program] : loaded_) {
      Track(driver_->UnloadProgram(std::move(program), {}), "unload");
    }
    loaded_.clear();
    Drain();
    compiled_.reset();
    driver_.reset();
    return report_;
  }

 private:
  struct Live {
    std::unique_ptr<BufferHandle> handle;
    std::shared_ptr<const std::string> content;
    std::vector<std::shared_ptr<Event>> uses;  // the write, then reads
  };
  struct Pending {
    std::shared_ptr<Event> event;
    std::string what;
    // Runs with an OK status (e.g. compares bytes read back).
    std::function<void()> on_ok;
  };

  bool Connect() {
    auto opened = driver::DriverRegistry::Open(address_);
    if (!opened.ok()) {
      Error(absl::StrCat("open: ", opened.status().ToString()));
      return false;
    }
    driver_ = *std::move(opened);
    return true;
  }

  // Drops the connection with everything in flight (the driver's destructor
  // closes the stream and the client), then checks that every operation was
  // still answered.
  void Disconnect() {
    ++report_.disconnects;
    live_.clear();
    loaded_.clear();
    compiled_.reset();
    driver_.reset();
    disconnected_ = true;
    Drain();
    disconnected_ = false;
  }

  void Error(std::string message) {
    if (report_.errors.size() < 10) {
      report_.errors.push_back(absl::StrCat(name_, ": ", message));
    }
  }

  void Track(std::shared_ptr<Event> event, std::string what,
             std::function<void()> on_ok = nullptr) {
    ++report_.operations;
    pending_.push_back({std::move(event), std::move(what), std::move(on_ok)});
  }

  void Drain() {
    for (Pending& p : pending_) {
      std::optional<absl::Status> status =
          p.event->AwaitWithTimeout(kAnswerBound);
      if (!status.has_value()) {
        Error(absl::StrCat(p.what, " was not answered within ",
                           absl::FormatDuration(kAnswerBound)));
        continue;
      }
      ++report_.answered;
      if (status->ok()) {
        ++report_.ok;
        if (p.on_ok) p.on_ok();
      } else if (disconnected_) {
        ++report_.aborted_by_disconnect;
      } else {
        ++report_.unexpected_errors;
        Error(absl::StrCat(p.what, ": ", status->ToString()));
      }
    }
    pending_.clear();
  }

  std::shared_ptr<std::string> RandomBytes(int64_t n) {
    auto bytes = std::make_shared<std::string>(n, '\0');
    for (int64_t i = 0; i < n; i += 8) {
      const uint64_t word = rng_();
      std::memcpy(bytes->data() + i, &word, std::min<int64_t>(8, n - i));
    }
    return bytes;
  }

  // Checks `got` against `want` once the read is answered OK.
  std::function<void()> Compare(std::shared_ptr<const std::string> want,
                                std::shared_ptr<const std::string> got,
                                std::string what) {
    return [this, want, got, what] {
      report_.bytes_checked += static_cast<int64_t>(want->size());
      if (*want != *got) {
        ++report_.mismatched_reads;
        Error(absl::StrCat(what, ": bytes read back differ"));
      }
    };
  }

  void Alloc() {
    if (live_.size() >= kMaxLiveBuffers) {
      Dealloc(rng_() % live_.size());
      return;
    }
    const int64_t n = 1 + static_cast<int64_t>(rng_() % 2048);
    const int core = static_cast<int>(rng_() % cores_);
    Live live;
    live.handle = driver_->Allocate(core, tpu_driver::HBM, F32Shape(n), {});
    Track(live.handle->OnReady(), "alloc");
    std::shared_ptr<std::string> content = RandomBytes(n * 4);
    Event* ready = live.handle->OnReady().get();
    std::shared_ptr<Event> written =
        driver_->TransferToDevice(content->data(), live.handle.get(), {ready});
    // `content` must outlive the transfer: the pending entry holds it.
    Track(written, "transfer_to", [content] {});
    live.content = std::move(content);
    live.uses.push_back(std::move(written));
    live_.push_back(std::move(live));
  }

  void ReadBack() {
    Live& live = live_[rng_() % live_.size()];
    auto got = std::make_shared<std::string>(live.content->size(), '\0');
    std::vector<Event*> after = {live.uses.front().get()};
    std::shared_ptr<Event> read =
        driver_->TransferFromDevice(live.handle.get(), got->data(), after);
    live.uses.push_back(read);
    Track(read, "transfer_from", Compare(live.content, got, "transfer_from"));
  }

  void Dealloc(size_t index) {
    Live live = std::move(live_[index]);
    live_.erase(live_.begin() + index);
    std::vector<Event*> after;
    for (const auto& use : live.uses) after.push_back(use.get());
    Track(driver_->Deallocate(std::move(live.handle), after), "dealloc");
  }

  void CompileLoadUnload() {
    const int64_t n = 1 + static_cast<int64_t>(rng_() % 256);
    auto compiled =
        driver_->CompileProgram(emulator::test_programs::AddF32(n), 1, {});
    Track(compiled->OnReady(), "compile");
    const int core = static_cast<int>(rng_() % cores_);
    auto loaded =
        driver_->LoadProgram(core, compiled.get(), {compiled->OnReady().get()});
    Track(loaded->OnReady(), "load");
    Event* ready = loaded->OnReady().get();
    Track(driver_->UnloadProgram(std::move(loaded), {ready}), "unload");
  }

  driver::LoadedProgramHandle* ProgramOn(int core) {
    if (compiled_ == nullptr) {
      compiled_ = driver_->CompileProgram(
          emulator::test_programs::AddF32(kProgramElements), 1, {});
      Track(compiled_->OnReady(), "compile");
    }
    auto& loaded = loaded_[core];
    if (loaded == nullptr) {
      loaded = driver_->LoadProgram(core, compiled_.get(),
                                    {compiled_->OnReady().get()});
      Track(loaded->OnReady(), "load");
    }
    return loaded.get();
  }

  // a + b on a core, computed by the worker and checked bit for bit.
  void Execute() {
    const int core = static_cast<int>(rng_() % cores_);
    driver::LoadedProgramHandle* program = ProgramOn(core);
    std::uniform_real_distribution<float> value(-1000, 1000);
    std::vector<float> a(kProgramElements), b(kProgramElements),
        sum(kProgramElements);
    for (int i = 0; i < kProgramElements; ++i) {
      a[i] = value(rng_);
      b[i] = value(rng_);
      sum[i] = a[i] + b[i];
    }
    const size_t bytes = kProgramElements * sizeof(float);
    auto a_bytes = std::make_shared<std::string>(
        reinterpret_cast<const char*>(a.data()), bytes);
    auto b_bytes = std::make_shared<std::string>(
        reinterpret_cast<const char*>(b.data()), bytes);
    auto want = std::make_shared<const std::string>(
        reinterpret_cast<const char*>(sum.data()), bytes);
    auto x = driver_->Allocate(core, tpu_driver::HBM,
                               F32Shape(kProgramElements), {});
    auto y = driver_->Allocate(core, tpu_driver::HBM,
                               F32Shape(kProgramElements), {});
    auto out = driver_->Allocate(core, tpu_driver::HBM,
                                 F32Shape(kProgramElements), {});
    Track(x->OnReady(), "alloc");
    Track(y->OnReady(), "alloc");
    Track(out->OnReady(), "alloc");
    auto wx = driver_->TransferToDevice(a_bytes->data(), x.get(),
                                        {x->OnReady().get()});
    Track(wx, "transfer_to", [a_bytes] {});
    auto wy = driver_->TransferToDevice(b_bytes->data(), y.get(),
                                        {y->OnReady().get()});
    Track(wy, "transfer_to", [b_bytes] {});
    xla::DeviceAssignmentProto assignment;
    assignment.set_replica_count(1);
    assignment.set_computation_count(1);
    assignment.add_computation_devices()->add_replica_device_ids(core);
    auto ran = driver_->ExecuteProgram(
        program, {x.get(), y.get()}, {out.get()}, assignment,
        {wx.get(), wy.get(), out->OnReady().get(),
         loaded_[core]->OnReady().get()});
    Track(ran, "execute");
    auto got = std::make_shared<std::string>(bytes, '\0');
    auto read =
        driver_->TransferFromDevice(out.get(), got->data(), {ran.get()});
    Track(read, "transfer_from (result)", Compare(want, got, "execute result"));
    Track(driver_->Deallocate(std::move(x), {ran.get()}), "dealloc");
    Track(driver_->Deallocate(std::move(y), {ran.get()}), "dealloc");
    Track(driver_->Deallocate(std::move(out), {read.get()}), "dealloc");
  }

  const std::string address_;
  const SoakOptions options_;
  const int cores_;
  std::mt19937_64 rng_;
  const std::string name_;
  std::unique_ptr<TpuDriver> driver_;
  std::vector<Live> live_;
  std::unique_ptr<driver::CompiledProgramHandle> compiled_;
  std::map<int, std::unique_ptr<driver::LoadedProgramHandle>> loaded_;
  std::vector<Pending> pending_;
  bool disconnected_ = false;
  SoakReport report_;
};

// HBM in use over all cores, as the worker reports it (capacity minus
// available), waiting (bounded) for released clients to be accounted.
int64_t HbmInUse(const std::string& address, const SoakOptions& options,
                 std::string* error) {
  auto opened = driver::DriverRegistry::Open(address);
  if (!opened.ok()) {
    *error = opened.status().ToString();
    return -1;
  }
  int64_t in_use = -1;
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  do {
    auto info = (*opened)->QuerySystemInfo();
    if (!info.ok()) {
      *error = info.status().ToString();
      return -1;
    }
    in_use = 0;
    for (const auto& core : info->local_core()) {
      in_use += options.hbm_bytes_per_core - core.hbm_bytes_available();
    }
    if (in_use == 0) break;
    absl::SleepFor(absl::Milliseconds(100));
  } while (absl::Now() < give_up);
  return in_use;
}

}  // namespace

bool SoakReport::Passed() const {
  return operations > 0 && answered == operations && unexpected_errors == 0 &&
         mismatched_reads == 0 && hbm_in_use_after == 0 && worker_alive_after &&
         rss_after_kb <= rss_baseline_kb * 11 / 10 && errors.empty();
}

std::string SoakReport::ToString() const {
  std::string s = absl::StrCat(
      "operations ", operations, ", answered ", answered, " (ok ", ok,
      ", aborted by a disconnect ", aborted_by_disconnect,
      ", unexpected errors ", unexpected_errors, "), disconnects ", disconnects,
      ", bytes checked ", bytes_checked, ", mismatched reads ",
      mismatched_reads, ", HBM in use after ", hbm_in_use_after,
      " B, worker RSS baseline ", rss_baseline_kb, " kB, peak ", rss_peak_kb,
      " kB, after ", rss_after_kb, " kB (",
      rss_baseline_kb > 0 ? 100 * rss_after_kb / rss_baseline_kb : 0,
      "% of baseline), worker alive ", worker_alive_after ? "yes" : "NO", ", ",
      absl::StrFormat("%.1f", seconds), " s");
  for (const auto& e : errors) absl::StrAppend(&s, "\n  ", e);
  return s;
}

absl::StatusOr<SoakReport> RunSoak(const SoakOptions& options) {
  auto worker = tools::ServerProcess::Start(
      {options.emulator_path, "--port=0",
       absl::StrCat("--chips=", options.chips),
       absl::StrCat("--cores_per_chip=", options.cores_per_chip),
       absl::StrCat("--hbm_bytes_per_core=", options.hbm_bytes_per_core),
       "--compute_threads=2"},
      options.scratch_dir, "soak_emulator");
  if (!worker.ok()) return worker.status();
  const std::string address = absl::StrCat("grpc://", (*worker)->address());
  const int pid = (*worker)->process().pid();

  // Warm-up: thread pools, gRPC and allocator arenas grow on first use; the
  // baseline is what the worker holds once it has served a client.
  SoakOptions warm = options;
  warm.disconnects_per_client = 0;
  {
    std::vector<std::thread> threads;
    Tally discarded;
    for (int c = 0; c < options.clients; ++c) {
      threads.emplace_back([&, c] {
        discarded.Add(SoakClient(address, warm, 100000 + c).Run(100));
      });
    }
    for (auto& t : threads) t.join();
  }
  const int64_t baseline_kb = StatusFieldKb(pid, "VmRSS");

  const absl::Time start = absl::Now();
  Tally tally;
  std::vector<std::thread> threads;
  for (int c = 0; c < options.clients; ++c) {
    threads.emplace_back([&, c] {
      tally.Add(SoakClient(address, options, c).Run(options.ops_per_client));
    });
  }
  for (auto& t : threads) t.join();
  SoakReport report = tally.Get();
  report.seconds = absl::ToDoubleSeconds(absl::Now() - start);

  std::string error;
  report.hbm_in_use_after = HbmInUse(address, options, &error);
  if (!error.empty()) report.errors.push_back("system info: " + error);
  report.rss_baseline_kb = baseline_kb;
  // The worker gives memory back once it has been without clients for a
  // second, and again 2, 4 and 8 s later (emulator/worker/worker.cc), and
  // the kernel takes the pages back gradually: wait until the RSS has been
  // within bounds and unchanged for 2 s, or 20 s in all.
  report.rss_after_kb = StatusFieldKb(pid, "VmRSS");
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  absl::Time settled_since = absl::Now();
  while (absl::Now() < give_up &&
         (report.rss_after_kb > baseline_kb * 11 / 10 ||
          absl::Now() - settled_since < absl::Seconds(2))) {
    absl::SleepFor(absl::Milliseconds(100));
    const int64_t rss_kb = StatusFieldKb(pid, "VmRSS");
    if (rss_kb != report.rss_after_kb) settled_since = absl::Now();
    report.rss_after_kb = rss_kb;
  }
  report.rss_peak_kb = StatusFieldKb(pid, "VmHWM");
  // Still running: waiting for its exit times out.
  report.worker_alive_after =
      !(*worker)->process().Wait(absl::ZeroDuration()).ok();
  return report;
}

}  // namespace tpu::tests
