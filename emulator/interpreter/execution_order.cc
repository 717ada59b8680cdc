#include "emulator/interpreter/execution_order.h"

#include <utility>

#include "absl/container/flat_hash_map.h"

namespace tpu::emulator::interpreter {
namespace {

bool IsRecvDone(const HloInstruction& i) { return i.opcode() == "recv-done"; }

// The channel a recv-done completes: its recv's (XLA copies it to both),
// its own when the recv's context reaches it through tuples or loop state.
int64_t RecvDoneChannel(const HloInstruction& recv_done) {
  if (recv_done.operand_count() == 1 &&
      recv_done.operand(0)->opcode() == "recv") {
    return recv_done.operand(0)->proto().channel_id();
  }
  return recv_done.proto().channel_id();
}

}  // namespace

std::vector<const HloInstruction*> ExecutionOrder(
    const HloComputation& computation) {
  const std::vector<const HloInstruction*>& order =
      computation.instructions_in_order();
  bool has_recv_done = false;
  absl::flat_hash_map<int64_t, std::vector<const HloInstruction*>> sends;
  for (const HloInstruction* i : order) {
    if (i->opcode() == "send") sends[i->proto().channel_id()].push_back(i);
    has_recv_done |= IsRecvDone(*i);
  }
  if (!has_recv_done || sends.empty()) return order;

  absl::flat_hash_map<int64_t, const HloInstruction*> by_id;
  for (const HloInstruction* i : order) by_id[i->id()] = i;
  // What must run before `i`: operands, control predecessors and, for a
  // recv-done, the sends on its channel.
  auto dependencies = [&](const HloInstruction* i) {
    std::vector<const HloInstruction*> deps(i->operands().begin(),
                                            i->operands().end());
    for (int64_t id : i->proto().control_predecessor_ids()) {
      auto it = by_id.find(id);
      if (it != by_id.end()) deps.push_back(it->second);
    }
    if (IsRecvDone(*i)) {
      auto it = sends.find(RecvDoneChannel(*i));
      if (it != sends.end()) {
        deps.insert(deps.end(), it->second.begin(), it->second.end());
      }
    }
    return deps;
  };

  // Iterative depth-first post-order, roots taken in the original order so
  // that nothing moves unless a send has to run earlier.
  enum class Mark { kNew, kActive, kDone };
  absl::flat_hash_map<const HloInstruction*, Mark> mark;
  std::vector<const HloInstruction*> result;
  result.reserve(order.size());
  struct Frame {
    const HloInstruction* instruction;
    std::vector<const HloInstruction*> deps;
    size_t next = 0;
  };
  for (const HloInstruction* root : order) {
    if (mark[root] != Mark::kNew) continue;
    std::vector<Frame> stack;
    stack.push_back({root, dependencies(root)});
    mark[root] = Mark::kActive;
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next < frame.deps.size()) {
        const HloInstruction* dep = frame.deps[frame.next++];
        // kActive: a cycle through a channel edge; leave the edge out.
        if (mark[dep] != Mark::kNew) continue;
        mark[dep] = Mark::kActive;
        stack.push_back({dep, dependencies(dep)});
        continue;
      }
      mark[frame.instruction] = Mark::kDone;
      result.push_back(frame.instruction);
      stack.pop_back();
    }
  }
  return result;
}

}  // namespace tpu::emulator::interpreter
