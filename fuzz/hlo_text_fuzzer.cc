// Fuzz target: the HLO text parser, and the printer over whatever it accepts.
// A module the parser accepts must print, and the printed text must parse
// again: the printer is what tools and error messages show users.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "hlo/text/hlo_parser.h"
#include "hlo/text/hlo_printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto module = tpu::hlo::ParseHloModule(text);
  (void)tpu::hlo::ParseShape(text);
  if (!module.ok()) return 0;
  std::string printed = tpu::hlo::PrintHloModule(*module);
  auto reparsed = tpu::hlo::ParseHloModule(printed);
  if (!reparsed.ok()) {
    std::fprintf(stderr, "Printed module does not parse: %s\n%s\n",
                 reparsed.status().ToString().c_str(), printed.c_str());
    std::abort();
  }
  return 0;
}
