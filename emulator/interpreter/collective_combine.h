#ifndef SOFTWARE_TPU_EMULATOR_INTERPRETER_COLLECTIVE_COMBINE_H_
#define SOFTWARE_TPU_EMULATOR_INTERPRETER_COLLECTIVE_COMBINE_H_

// What each collective computes from every participant's contribution
// (operation_semantics.md), as pure functions of the contributions in group
// order. They run once per exchange, on the thread that completes it, and
// produce one output per rank; outputs alias contributions or each other
// wherever the semantics allow, since values are immutable.
//
// Thread safety: stateless functions; `reducer` is called on the calling
// thread only.

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/interpreter/reducer.h"
#include "hlo/literal.h"

namespace Eigen {
struct ThreadPoolDevice;
}  // namespace Eigen

namespace tpu::emulator::interpreter {

// How to combine two scalars when the reduction is not one of the
// recognized kinds: calls the HLO computation.
using ScalarReducer = std::function<absl::StatusOr<Literal>(
    const Literal& accumulated, const Literal& next)>;

struct Reduction {
  Red kind = Red::kOther;
  // Required for Red::kOther.
  ScalarReducer reducer;
};

// Element-wise reduction of the contributions (arrays, or tuples of arrays
// reduced leaf by leaf), folding them in the order `order` gives (indices
// into `contributions`), so the result does not depend on arrival order.
absl::StatusOr<Literal> ReduceContributions(
    const std::vector<Literal>& contributions, const std::vector<int>& order,
    const Reduction& reduction, const Eigen::ThreadPoolDevice* device);

// The arrays placed one after another along `dimension`.
Literal ConcatenateAlong(const std::vector<const Literal*>& parts,
                         int64_t dimension,
                         const Eigen::ThreadPoolDevice* device);

// Part `index` of `count` equal parts of `array` along `dimension`.
Literal SliceAlong(const Literal& array, int64_t dimension, int64_t index,
                   int64_t count, const Eigen::ThreadPoolDevice* device);

// The array form of all-to-all: rank i receives part i of every rank's
// contribution, placed in rank order along `dimension`.
std::vector<Literal> AllToAllArrays(const std::vector<Literal>& contributions,
                                    int64_t dimension,
                                    const Eigen::ThreadPoolDevice* device);

}  // namespace tpu::emulator::interpreter

#endif  // SOFTWARE_TPU_EMULATOR_INTERPRETER_COLLECTIVE_COMBINE_H_
