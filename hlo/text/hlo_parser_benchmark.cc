// Parser (and printer) throughput on generated modules of ~100 KB and ~3 MB.
//
//   bazel run -c opt //hlo/text:hlo_parser_benchmark
//
// Bytes/s is the HLO text size over the wall time of one parse (or print).

#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "hlo/text/hlo_parser.h"
#include "hlo/text/hlo_printer.h"

namespace tpu::hlo {
namespace {

// A module in the style of an XLA dump: a reducer, then an entry with
// parameters, elementwise chains with operand shapes and metadata, broadcasts,
// small constants, dots, reduces and a final tuple; at least `target_bytes`.
std::string GenerateModule(size_t target_bytes) {
  std::string text =
      "HloModule generated, entry_computation_layout={(f32[128,256]{1,0}, "
      "f32[256,128]{1,0})->f32[128,128]{1,0}}\n\n"
      "%add_f32 (x: f32[], y: f32[]) -> f32[] {\n"
      "  %x = f32[] parameter(0)\n"
      "  %y = f32[] parameter(1)\n"
      "  ROOT %add = f32[] add(f32[] %x, f32[] %y)\n"
      "}\n\n"
      "ENTRY %main (p0: f32[128,256], p1: f32[256,128]) -> f32[128,128] {\n"
      "  %p0 = f32[128,256]{1,0} parameter(0)\n"
      "  %p1 = f32[256,128]{1,0} parameter(1)\n"
      "  %acc.0 = f32[128,128]{1,0} dot(f32[128,256]{1,0} %p0, "
      "f32[256,128]{1,0} %p1), lhs_contracting_dims={1}, "
      "rhs_contracting_dims={0}\n";
  std::string previous = "acc.0";
  for (int i = 1; text.size() < target_bytes; ++i) {
    const std::string meta = absl::StrCat(
        ", metadata={op_type=\"Mul\" op_name=\"model/layer_", i,
        "/mul\" source_file=\"model.py\" source_line=", 100 + i, "}");
    absl::StrAppend(
        &text, "  %c.", i, " = f32[4]{0} constant({0.5, -1.25, 3, ", i, "})\n",
        "  %s.", i, " = f32[] reduce(f32[4]{0} %c.", i,
        ", f32[] %zero), dimensions={0}, to_apply=%add_f32\n", "  %b.", i,
        " = f32[128,128]{1,0} broadcast(f32[] %s.", i, "), dimensions={}", meta,
        "\n", "  %m.", i, " = f32[128,128]{1,0} multiply(f32[128,128]{1,0} %",
        previous, ", f32[128,128]{1,0} %b.", i, ")", meta, "\n", "  %e.", i,
        " = f32[128,128]{1,0} exponential(f32[128,128]{1,0} %m.", i, ")", meta,
        "\n", "  %acc.", i, " = f32[128,128]{1,0} add(f32[128,128]{1,0} %e.", i,
        ", f32[128,128]{1,0} %", previous, ")", meta, "\n");
    previous = absl::StrCat("acc.", i);
  }
  absl::StrAppend(&text,
                  "  %zero = f32[] constant(0)\n  ROOT %out = "
                  "f32[128,128]{1,0} copy(f32[128,128]{1,0} %",
                  previous, ")\n}\n");
  return text;
}

void BM_ParseHloModule(benchmark::State& state) {
  const std::string text = GenerateModule(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    absl::StatusOr<xla::HloModuleProto> module = ParseHloModule(text);
    if (!module.ok()) {
      state.SkipWithError(std::string(module.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(module);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
  state.counters["text_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_ParseHloModule)
    ->Arg(100 << 10)
    ->Arg(3 << 20)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_PrintHloModule(benchmark::State& state) {
  const std::string text = GenerateModule(static_cast<size_t>(state.range(0)));
  absl::StatusOr<xla::HloModuleProto> module = ParseHloModule(text);
  if (!module.ok()) {
    state.SkipWithError(std::string(module.status().message()).c_str());
    return;
  }
  size_t bytes = 0;
  for (auto _ : state) {
    std::string printed = PrintHloModule(*module);
    bytes = printed.size();
    benchmark::DoNotOptimize(printed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(bytes));
}
BENCHMARK(BM_PrintHloModule)
    ->Arg(100 << 10)
    ->Arg(3 << 20)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tpu::hlo
