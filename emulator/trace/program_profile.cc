#include "emulator/trace/program_profile.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tpu::emulator::trace {

void ProgramProfiles::AddRun(const std::string& program,
                             const std::string& fingerprint,
                             const std::vector<InstructionSample>& samples) {
  absl::MutexLock lock(&mu_);
  Program& entry = programs_[absl::StrCat(program, "|", fingerprint)];
  entry.name = program;
  entry.fingerprint = fingerprint;
  ++entry.runs;
  for (const InstructionSample& sample : samples) {
    Totals& totals = entry.instructions[sample.name];
    totals.opcode = sample.opcode;
    ++totals.count;
    totals.nanos += sample.nanos;
    totals.bytes += sample.bytes;
  }
}

tpu_emulator::GetProfileResponse ProgramProfiles::Get(
    const std::string& program) const {
  tpu_emulator::GetProfileResponse response;
  absl::MutexLock lock(&mu_);
  std::vector<const Program*> matching;
  for (const auto& [key, entry] : programs_) {
    if (program.empty() || entry.name == program) matching.push_back(&entry);
  }
  std::sort(matching.begin(), matching.end(),
            [](const Program* a, const Program* b) {
              return std::tie(a->name, a->fingerprint) <
                     std::tie(b->name, b->fingerprint);
            });
  for (const Program* entry : matching) {
    tpu_emulator::ProgramProfile* out = response.add_programs();
    out->set_program(entry->name);
    out->set_fingerprint(entry->fingerprint);
    out->set_runs(entry->runs);
    for (const auto& [name, totals] : entry->instructions) {
      tpu_emulator::InstructionProfile* row = out->add_instructions();
      row->set_name(name);
      row->set_opcode(totals.opcode);
      row->set_count(totals.count);
      row->set_total_nanos(totals.nanos);
      row->set_bytes(totals.bytes);
    }
    std::sort(out->mutable_instructions()->begin(),
              out->mutable_instructions()->end(),
              [](const tpu_emulator::InstructionProfile& a,
                 const tpu_emulator::InstructionProfile& b) {
                if (a.total_nanos() != b.total_nanos()) {
                  return a.total_nanos() > b.total_nanos();
                }
                return a.name() < b.name();
              });
  }
  return response;
}

void InstructionTimer::Started(const std::string&) {
  started_ = std::chrono::steady_clock::now();
}

void InstructionTimer::Finished(const std::string& instruction,
                                const std::string& opcode, int64_t bytes) {
  const auto finished = std::chrono::steady_clock::now();
  const int64_t nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(finished - started_)
          .count();
  if (recorder_ != nullptr && recorder_->on()) {
    const int64_t start = recorder_->ToMicros(started_);
    recorder_->Complete(tid_, Name(instruction), "instruction", start,
                        recorder_->ToMicros(finished) - start,
                        Args().Add("opcode", opcode).Add("bytes", bytes));
  }
  if (profile_) samples_.push_back({instruction, opcode, nanos, bytes});
}

}  // namespace tpu::emulator::trace
