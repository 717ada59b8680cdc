// Kernel family: collectives. all-reduce, all-gather, reduce-scatter,
// all-to-all, collective-permute and collective-broadcast, their async
// -start/-done pairs (run synchronously in -start, as one device sees them),
// meeting peers through the execution's CollectiveExecutor.

#include <algorithm>
#include <memory>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "emulator/interpreter/collective_combine.h"
#include "emulator/interpreter/collective_groups.h"
#include "emulator/interpreter/collectives.h"
#include "emulator/interpreter/kernel_util.h"

namespace tpu::emulator::interpreter {
namespace {

enum class Kind {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kPermute,
  kBroadcast,
};

struct Spec {
  Kind kind;
  // The opcode as written ("all-reduce-start"), for requests and reports.
  std::string opcode;
  std::string computation;
  std::string instruction;
  CollectiveGroups groups;
  int64_t dimension = -1;
  Red reduction = Red::kOther;
  const CompiledComputation* reducer = nullptr;
  std::vector<std::pair<int64_t, int64_t>> pairs;
  // Shape of what the collective computes; for -start ops whose result is
  // (operands, outputs, context...), the result's element 1.
  Shape output;
  bool start_tuple = false;
  Shape start_shape;
  // The array operands (several for the variadic and tuple forms).
  std::vector<Shape> operands;
  // Several operands (or one tuple-shaped result) travel as one tuple.
  bool variadic = false;
  // "f32[1024], s32[2]": the operands' shapes, for the wait report.
  std::string signature;
  int64_t operand_count = 1;
};

// Built once at compile time: operand shapes are static.
std::string Signature(const std::vector<Shape>& operands) {
  std::vector<std::string> parts;
  for (const Shape& operand : operands) parts.push_back(operand.ToString());
  return absl::StrJoin(parts, ", ");
}

// Indices of `ids` in ascending id order: reductions fold in replica (or
// device) id order whatever order the group is written in, so every
// participant and every run sees the same bits.
std::vector<int> AscendingOrder(const std::vector<int64_t>& ids) {
  std::vector<int> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return ids[a] < ids[b]; });
  return order;
}

class CollectiveKernel : public Kernel {
 public:
  explicit CollectiveKernel(Spec spec) : spec_(std::move(spec)) {}

  absl::StatusOr<Literal> Run(
      KernelContext& context,
      absl::Span<const Operand> operands) const override {
    const ExecutionContext& execution = context.execution();
    const DeviceAssignment& assignment =
        AssignmentOrSingle(execution.assignment);
    absl::StatusOr<Participants> participants =
        spec_.kind == Kind::kPermute
            ? AllInMode(spec_.groups.mode, assignment, execution.replica_id,
                        execution.partition_id)
            : ResolveParticipants(spec_.groups, assignment,
                                  execution.replica_id, execution.partition_id);
    if (!participants.ok()) return participants.status();
    if (absl::Status s = CheckGroupSize(participants->devices.size());
        !s.ok()) {
      return s;
    }

    Literal contribution;
    if (spec_.variadic) {
      std::vector<Literal> elements;
      for (const Operand& operand : operands)
        elements.push_back(*operand.value);
      contribution = Literal::Tuple(std::move(elements));
    } else {
      contribution = *operands[0].value;
    }
    CollectiveRequest request;
    request.computation = spec_.computation;
    request.instruction = spec_.instruction;
    request.kind = spec_.opcode;
    request.devices = std::move(participants->devices);
    request.rank = participants->rank;
    request.signature = spec_.signature;

    // The combine may run on another participant's thread while this one
    // waits inside Exchange, so it may refer to this frame. One captured
    // pointer keeps std::function from allocating at every collective.
    struct CombineArgs {
      const CollectiveKernel* kernel;
      const std::vector<int64_t>* ids;
      const Eigen::ThreadPoolDevice* device;
      KernelContext* context;
    } args{this, &participants->ids, context.device(), &context};
    CollectiveCombine combine = [&args](const std::vector<Literal>& all)
        -> absl::StatusOr<std::vector<Literal>> {
      return args.kernel->Combine(all, *args.ids, args.device, *args.context);
    };

    // An all-reduce is a left fold in ascending id order: a worker of a pod
    // slice may fold its own run of that order and pass the partial on.
    CollectiveFold fold = [&args](const std::vector<const Literal*>& values)
        -> absl::StatusOr<Literal> {
      return args.kernel->Fold(values, *args.context);
    };
    if (spec_.kind == Kind::kAllReduce) {
      request.fold = &fold;
      request.fold_order = AscendingOrder(participants->ids);
    }

    absl::StatusOr<Literal> output;
    if (execution.collectives != nullptr) {
      output = execution.collectives->Exchange(request, contribution, combine);
    } else if (request.devices.size() == 1) {
      absl::StatusOr<std::vector<Literal>> outputs = combine({contribution});
      if (!outputs.ok()) return outputs.status();
      output = std::move((*outputs)[0]);
    } else {
      return absl::FailedPreconditionError(absl::StrCat(
          spec_.opcode, " needs ", request.devices.size(),
          " participants but this execution has no way to meet its peers; "
          "run the program on a worker"));
    }
    if (!output.ok()) return output.status();
    if (!spec_.start_tuple) return output;
    return WrapStart(std::move(contribution), *std::move(output));
  }

 private:
  // Shapes that depend on the group size, checked before meeting anyone so
  // that every participant fails alike instead of some waiting forever.
  absl::Status CheckGroupSize(size_t size) const {
    const int64_t n = static_cast<int64_t>(size);
    if (spec_.kind == Kind::kAllToAll && spec_.dimension < 0) {
      if (spec_.operand_count == n) return absl::OkStatus();
      return Malformed(absl::StrCat(
          spec_.instruction, " has ", spec_.operand_count,
          " operands but its group has ", n,
          " participants; the tuple form of all-to-all needs one operand per "
          "participant"));
    }
    const std::vector<Shape> outputs = spec_.output.Leaves();
    for (size_t i = 0; i < spec_.operands.size(); ++i) {
      const Shape& in = spec_.operands[i];
      std::vector<int64_t> dims = in.dimensions();
      const int64_t d = spec_.dimension;
      bool fits = true;
      if (spec_.kind == Kind::kAllGather) {
        dims[d] *= n;
      } else if (spec_.kind == Kind::kReduceScatter) {
        fits = dims[d] % n == 0;
        dims[d] /= n;
      } else if (spec_.kind == Kind::kAllToAll) {
        fits = dims[d] % n == 0;
      }
      const Shape expected = Shape::Array(in.element_type(), dims);
      if (!fits || i >= outputs.size() || outputs[i] != expected) {
        return Malformed(absl::StrCat(
            spec_.instruction, " with ", n, " participants maps operand ",
            in.ToString(), " to ", fits ? expected.ToString() : "no shape",
            " but the instruction's result is ", spec_.output.ToString()));
      }
    }
    return absl::OkStatus();
  }

  // A -start result: (operands, outputs, context...). The context elements
  // mean nothing once the exchange is done; they are zeros.
  Literal WrapStart(Literal contribution, Literal output) const {
    std::vector<Literal> elements;
    elements.push_back(std::move(contribution));
    elements.push_back(std::move(output));
    const std::vector<Shape>& shapes = spec_.start_shape.tuple_shapes();
    for (size_t k = 2; k < shapes.size(); ++k) {
      elements.push_back(Literal::Zeros(shapes[k]));
    }
    return Literal::Tuple(std::move(elements));
  }

  // The reduction over `values` in the order given.
  absl::StatusOr<Literal> Fold(const std::vector<const Literal*>& values,
                               KernelContext& context) const {
    std::vector<Literal> all;
    std::vector<int> order;
    for (const Literal* value : values) {
      order.push_back(static_cast<int>(all.size()));
      all.push_back(*value);
    }
    return ReduceContributions(all, order, ReductionFor(context),
                               context.device());
  }

  Reduction ReductionFor(KernelContext& context) const {
    Reduction reduction{spec_.reduction, nullptr};
    if (spec_.reducer != nullptr) {
      reduction.reducer = [this, &context](const Literal& a, const Literal& b) {
        return context.Call(*spec_.reducer, {a, b});
      };
    }
    return reduction;
  }

  absl::StatusOr<std::vector<Literal>> Combine(
      const std::vector<Literal>& all, const std::vector<int64_t>& ids,
      const Eigen::ThreadPoolDevice* device, KernelContext& context) const {
    const size_t n = all.size();
    switch (spec_.kind) {
      case Kind::kAllReduce:
      case Kind::kReduceScatter: {
        absl::StatusOr<Literal> reduced = ReduceContributions(
            all, AscendingOrder(ids), ReductionFor(context), device);
        if (!reduced.ok()) return reduced.status();
        if (spec_.kind == Kind::kAllReduce) {
          return std::vector<Literal>(n, *reduced);
        }
        return ScatterParts(*reduced, n, device);
      }
      case Kind::kAllGather: {
        return std::vector<Literal>(n, GatherParts(all, device));
      }
      case Kind::kAllToAll:
        if (spec_.dimension >= 0) {
          return AllToAllArrays(all, spec_.dimension, device);
        } else {
          std::vector<Literal> outputs;
          for (size_t i = 0; i < n; ++i) {
            std::vector<Literal> received;
            for (size_t j = 0; j < n; ++j) {
              received.push_back(all[j].element(static_cast<int64_t>(i)));
            }
            outputs.push_back(Literal::Tuple(std::move(received)));
          }
          return outputs;
        }
      case Kind::kPermute: {
        std::vector<Literal> outputs(n, Literal::Zeros(all[0].shape()));
        for (const auto& [source, target] : spec_.pairs) {
          if (source < static_cast<int64_t>(n) &&
              target < static_cast<int64_t>(n)) {
            outputs[target] = all[source];
          }
        }
        return outputs;
      }
      case Kind::kBroadcast:
        return std::vector<Literal>(n, all[0]);
    }
    return absl::InternalError("unknown collective kind");
  }

  Literal GatherParts(const std::vector<Literal>& all,
                      const Eigen::ThreadPoolDevice* device) const {
    auto gather_leaf = [&](auto leaf_of) {
      std::vector<const Literal*> parts;
      for (const Literal& contribution : all) {
        parts.push_back(&leaf_of(contribution));
      }
      return ConcatenateAlong(parts, spec_.dimension, device);
    };
    if (!spec_.variadic) {
      return gather_leaf([](const Literal& c) -> const Literal& { return c; });
    }
    std::vector<Literal> elements;
    for (int64_t j = 0; j < all[0].tuple_size(); ++j) {
      elements.push_back(gather_leaf(
          [j](const Literal& c) -> const Literal& { return c.element(j); }));
    }
    return Literal::Tuple(std::move(elements));
  }

  std::vector<Literal> ScatterParts(
      const Literal& reduced, size_t n,
      const Eigen::ThreadPoolDevice* device) const {
    std::vector<Literal> outputs;
    for (size_t r = 0; r < n; ++r) {
      if (!reduced.shape().IsTuple()) {
        outputs.push_back(SliceAlong(reduced, spec_.dimension,
                                     static_cast<int64_t>(r),
                                     static_cast<int64_t>(n), device));
        continue;
      }
      std::vector<Literal> elements;
      for (int64_t j = 0; j < reduced.tuple_size(); ++j) {
        elements.push_back(SliceAlong(reduced.element(j), spec_.dimension,
                                      static_cast<int64_t>(r),
                                      static_cast<int64_t>(n), device));
      }
      outputs.push_back(Literal::Tuple(std::move(elements)));
    }
    return outputs;
  }

  Spec spec_;
};

absl::StatusOr<Kind> KindOf(const std::string& opcode) {
  if (opcode == "all-reduce" || opcode == "all-reduce-start") {
    return Kind::kAllReduce;
  }
  if (opcode == "all-gather" || opcode == "all-gather-start") {
    return Kind::kAllGather;
  }
  if (opcode == "reduce-scatter") return Kind::kReduceScatter;
  if (opcode == "all-to-all") return Kind::kAllToAll;
  if (opcode == "collective-permute" || opcode == "collective-permute-start") {
    return Kind::kPermute;
  }
  if (opcode == "collective-broadcast") return Kind::kBroadcast;
  return absl::InternalError(absl::StrCat("not a collective: ", opcode));
}

// The reduction of all-reduce and reduce-scatter: a recognized kind runs as
// a typed loop; anything else calls the computation per element.
absl::Status ReadReduction(const HloInstruction& instruction,
                           KernelCompiler& compiler, Spec* spec) {
  if (instruction.called_computations().size() != 1) {
    return Malformed(absl::StrCat(
        instruction.opcode(), " needs one reduction computation (to_apply)"));
  }
  const HloComputation& to_apply = *instruction.called_computations()[0];
  spec->reduction = MatchReducer(to_apply);
  absl::StatusOr<const CompiledComputation*> compiled =
      compiler.Compile(&to_apply);
  if (!compiled.ok()) return compiled.status();
  spec->reducer = *compiled;
  return absl::OkStatus();
}

absl::Status ReadPairs(const HloInstruction& instruction, int num_replicas,
                       Spec* spec) {
  absl::flat_hash_set<int64_t> targets;
  const bool replica_ids = spec->groups.mode == GroupMode::kCrossReplica;
  for (const xla::SourceTarget& pair :
       instruction.proto().source_target_pairs()) {
    for (int64_t id : {pair.source(), pair.target()}) {
      if (id < 0 || (replica_ids && id >= num_replicas)) {
        return Malformed(absl::StrCat("source_target_pairs name replica ", id,
                                      " but the program is compiled for ",
                                      num_replicas, " replicas"));
      }
    }
    if (!targets.insert(pair.target()).second) {
      return Malformed(absl::StrCat("source_target_pairs send to ",
                                    pair.target(), " twice"));
    }
    spec->pairs.emplace_back(pair.source(), pair.target());
  }
  return absl::OkStatus();
}

absl::Status ReadShapes(const HloInstruction& instruction, Spec* spec) {
  if (instruction.operand_count() < 1) {
    return Malformed(absl::StrCat(instruction.opcode(), " needs an operand"));
  }
  for (const HloInstruction* operand : instruction.operands()) {
    if (absl::Status s = ExpectArray(operand->shape(), "collective operand");
        !s.ok()) {
      return s;
    }
    spec->operands.push_back(operand->shape());
  }
  spec->signature = Signature(spec->operands);
  spec->operand_count = instruction.operand_count();
  spec->variadic = instruction.operand_count() > 1;
  const Shape& shape = instruction.shape();
  const bool is_start = absl::EndsWith(instruction.opcode(), "-start");
  spec->start_shape = shape;
  // all-gather-start and collective-permute-start return (operands,
  // outputs, ...); all-reduce-start returns its outputs.
  spec->start_tuple = is_start && spec->kind != Kind::kAllReduce;
  if (spec->start_tuple) {
    if (!shape.IsTuple() || shape.tuple_size() < 2) {
      return Malformed(absl::StrCat(instruction.opcode(),
                                    " must return a tuple (operands, outputs, "
                                    "...), not ",
                                    shape.ToString()));
    }
    spec->output = shape.tuple_shapes()[1];
  } else {
    spec->output = shape;
  }
  const bool tuple_all_to_all =
      spec->kind == Kind::kAllToAll && spec->dimension < 0;
  if (!tuple_all_to_all && spec->variadic != spec->output.IsTuple()) {
    return Malformed(absl::StrCat(
        instruction.opcode(), " with ", instruction.operand_count(),
        " operands cannot produce ", spec->output.ToString()));
  }
  if (spec->dimension >= 0) {
    for (const Shape& operand : spec->operands) {
      if (spec->dimension >= operand.rank()) {
        return Malformed(absl::StrCat("dimension ", spec->dimension,
                                      " is out of range for operand ",
                                      operand.ToString()));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> CompileCollective(
    const HloInstruction& instruction, KernelCompiler& compiler) {
  Spec spec;
  absl::StatusOr<Kind> kind = KindOf(instruction.opcode());
  if (!kind.ok()) return kind.status();
  spec.kind = *kind;
  spec.opcode = instruction.opcode();
  spec.instruction = instruction.name();
  spec.computation = instruction.parent()->name();
  const int num_replicas = compiler.options().num_replicas;
  absl::StatusOr<CollectiveGroups> groups =
      ReadCollectiveGroups(instruction, num_replicas);
  if (!groups.ok()) return groups.status();
  spec.groups = *std::move(groups);
  const auto& dims = instruction.proto().dimensions();
  if (spec.kind == Kind::kAllGather || spec.kind == Kind::kReduceScatter) {
    if (dims.size() != 1) {
      return Malformed(
          absl::StrCat(instruction.opcode(), " needs exactly one dimension"));
    }
    spec.dimension = dims[0];
  } else if (spec.kind == Kind::kAllToAll && !dims.empty()) {
    if (dims.size() != 1 || instruction.operand_count() != 1) {
      return Malformed(
          "the array form of all-to-all takes one operand and one "
          "split dimension");
    }
    spec.dimension = dims[0];
  }
  if (spec.kind == Kind::kPermute) {
    if (instruction.operand_count() != 1) {
      return absl::UnimplementedError(
          "collective-permute with more than one operand (the in-place "
          "form with slices) is not supported");
    }
    if (absl::Status s = ReadPairs(instruction, num_replicas, &spec); !s.ok()) {
      return s;
    }
  }
  if (spec.kind == Kind::kAllReduce || spec.kind == Kind::kReduceScatter) {
    if (absl::Status s = ReadReduction(instruction, compiler, &spec); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ReadShapes(instruction, &spec); !s.ok()) return s;
  return std::unique_ptr<Kernel>(new CollectiveKernel(std::move(spec)));
}

// all-reduce-done, all-gather-done, collective-permute-done: the exchange
// happened in -start, so done only picks the outputs out of its operand.
absl::StatusOr<std::unique_ptr<Kernel>> CompileCollectiveDone(
    const HloInstruction& instruction, KernelCompiler&) {
  if (absl::Status s = ExpectOperands(instruction, 1); !s.ok()) return s;
  const Shape& operand = instruction.operand(0)->shape();
  if (operand == instruction.shape()) {
    return MakeKernel(
        [](KernelContext&,
           absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
          return *operands[0].value;
        });
  }
  if (operand.IsTuple() && operand.tuple_size() >= 2 &&
      operand.tuple_shapes()[1] == instruction.shape()) {
    return MakeKernel(
        [](KernelContext&,
           absl::Span<const Operand> operands) -> absl::StatusOr<Literal> {
          return operands[0].value->element(1);
        });
  }
  return Malformed(absl::StrCat(instruction.opcode(), " of ",
                                operand.ToString(), " cannot produce ",
                                instruction.shape().ToString()));
}

}  // namespace

void RegisterCollectiveKernels(KernelRegistry& registry) {
  for (const char* opcode :
       {"all-reduce", "all-reduce-start", "all-gather", "all-gather-start",
        "reduce-scatter", "all-to-all", "collective-permute",
        "collective-permute-start", "collective-broadcast"}) {
    registry.Register(opcode, &CompileCollective);
  }
  for (const char* opcode :
       {"all-reduce-done", "all-gather-done", "collective-permute-done"}) {
    registry.Register(opcode, &CompileCollectiveDone);
  }
}

}  // namespace tpu::emulator::interpreter
