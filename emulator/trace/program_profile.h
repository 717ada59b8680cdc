#ifndef SOFTWARE_TPU_EMULATOR_TRACE_PROGRAM_PROFILE_H_
#define SOFTWARE_TPU_EMULATOR_TRACE_PROGRAM_PROFILE_H_

// Per compiled program, time and bytes per top-level instruction, summed
// over its runs (tpu_emulator --profile_programs, tpu_ctl profile), and the
// observer that feeds it and the trace's instruction slices.
//
// Thread safety: ProgramProfiles is safe for concurrent use; an
// InstructionTimer belongs to one execution (one thread).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "emulator/interpreter/executable.h"
#include "emulator/trace/recorder.h"
#include "proto/control.pb.h"

namespace tpu::emulator::trace {

struct InstructionSample {
  std::string name;
  std::string opcode;
  int64_t nanos = 0;
  int64_t bytes = 0;
};

class ProgramProfiles {
 public:
  // One run of `program` (module name) with fingerprint `fingerprint`.
  void AddRun(const std::string& program, const std::string& fingerprint,
              const std::vector<InstructionSample>& samples);
  // Profiles of programs named `program` (all if empty), each program's
  // instructions most expensive first.
  tpu_emulator::GetProfileResponse Get(const std::string& program) const;

 private:
  struct Totals {
    std::string opcode;
    int64_t count = 0;
    int64_t nanos = 0;
    int64_t bytes = 0;
  };
  struct Program {
    std::string name;
    std::string fingerprint;
    int64_t runs = 0;
    absl::flat_hash_map<std::string, Totals> instructions;
  };
  mutable absl::Mutex mu_;
  // By "name|fingerprint".
  absl::flat_hash_map<std::string, Program> programs_ ABSL_GUARDED_BY(mu_);
};

// Times each top-level instruction of one execution: a slice on `tid` when
// `recorder` is given, and a sample for the profile when `profile` is true.
class InstructionTimer : public interpreter::InstructionObserver {
 public:
  InstructionTimer(Recorder* recorder, int64_t tid, bool profile)
      : recorder_(recorder), tid_(tid), profile_(profile) {}

  void Started(const std::string& instruction) override;
  void Finished(const std::string& instruction, const std::string& opcode,
                int64_t bytes) override;

  const std::vector<InstructionSample>& samples() const { return samples_; }

 private:
  Recorder* const recorder_;
  const int64_t tid_;
  const bool profile_;
  std::chrono::steady_clock::time_point started_;
  std::vector<InstructionSample> samples_;
};

}  // namespace tpu::emulator::trace

#endif  // SOFTWARE_TPU_EMULATOR_TRACE_PROGRAM_PROFILE_H_
