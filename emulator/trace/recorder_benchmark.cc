// What one recorded event costs, without the worker around it.
//
//   bazel build //emulator/trace:recorder_benchmark &&
//     bazel-bin/emulator/trace/recorder_benchmark
//
// BM_TransferSlice: a transfer's slice as buffer_ops records it (a name with
// a number, three arguments, begin and end); /0 with the recorder off (the
// cost tracing off adds to every operation), /1 with it on. Each iteration
// is one slice, all in one recording; one recording as long before timing
// warms the buffers, as in a worker that has traced before.

#include <string>

#include "benchmark/benchmark.h"
#include "emulator/trace/recorder.h"

namespace tpu::emulator::trace {
namespace {

constexpr int kSlicesPerRecording = 100000;

void BM_TransferSlice(benchmark::State& state) {
  Recorder recorder(0);
  const bool on = state.range(0) != 0;
  if (on && !recorder.Start(false).ok()) {
    return state.SkipWithError("cannot start");
  }
  const std::string operation = "1:42";
  auto slice_once = [&]() {
    uint64_t slice = 0;
    if (recorder.on()) {
      slice = recorder.Begin(ClientTrack(1), Name("transfer_to", " ", 64, " B"),
                             "transfer",
                             Args()
                                 .Add("operation", operation)
                                 .Add("direction", "host to device")
                                 .Add("bytes", 64));
    }
    ScopedSlice scoped(&recorder, slice);
  };
  auto restart = [&]() {
    if (!on) return;
    benchmark::DoNotOptimize(recorder.Stop());
    if (!recorder.Start(false).ok()) state.SkipWithError("cannot restart");
  };
  for (int i = 0; i < kSlicesPerRecording; ++i) slice_once();
  restart();
  int count = 0;
  for (auto _ : state) {
    slice_once();
    if (++count % kSlicesPerRecording == 0) {
      state.PauseTiming();
      restart();
      state.ResumeTiming();
    }
  }
}
BENCHMARK(BM_TransferSlice)->Arg(0)->Arg(1)->Iterations(kSlicesPerRecording);

}  // namespace
}  // namespace tpu::emulator::trace
