#include "tests/hlo_corpus/known_inputs.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>

#include "hlo/shape.h"

namespace tpu {
namespace {

// sizes[i][j][k]: rows replica i sends replica j in update k.
using RowCounts = std::vector<std::vector<std::vector<int64_t>>>;

// The tables of XLA's tests, by corpus file.
const std::map<std::string, std::function<RowCounts()>>& Tables() {
  static const auto* tables =
      new std::map<std::string, std::function<RowCounts()>>{
          // RaggedAllToAll_2GPUs: {{1, 1}, {3, 1}}.
          {"220_collective_ops_e2e_test.hlo",
           [] {
             return RowCounts{{{1}, {1}}, {{3}, {1}}};
           }},
          // RaggedAllToAll_2GPUs_MultipleUpdates: {{{1, 2}, {2, 1}},
          // {{3, 1}, {1, 1}}}.
          {"221_collective_ops_e2e_test.hlo",
           [] {
             return RowCounts{{{1, 2}, {2, 1}}, {{3, 1}, {1, 1}}};
           }},
          // RaggedAllToAll_2GPUs_NonDefaultLayout: {{4, 7}, {2, 5}}.
          {"222_collective_ops_e2e_test.hlo",
           [] {
             return RowCounts{{{4}, {7}}, {{2}, {5}}};
           }},
          // RaggedAllToAll_8GPUs: 8 x 8 x 4 counts in [0, 10).
          {"223_collective_ops_e2e_test.hlo",
           [] {
             RowCounts counts(8, std::vector<std::vector<int64_t>>(
                                     8, std::vector<int64_t>(4)));
             for (int i = 0; i < 8; ++i) {
               for (int j = 0; j < 8; ++j) {
                 for (int k = 0; k < 4; ++k) {
                   counts[i][j][k] = (7 * i + 3 * j + 5 * k) % 10;
                 }
               }
             }
             return counts;
           }},
      };
  return *tables;
}

Literal Metadata(xla::PrimitiveType type, const std::vector<int64_t>& values) {
  std::vector<int64_t> dims = {static_cast<int64_t>(values.size())};
  if (type == xla::S64) {
    return Literal::FromVector<int64_t>(type, dims, values);
  }
  std::vector<int32_t> narrow(values.begin(), values.end());
  return Literal::FromVector<int32_t>(xla::S32, dims, narrow);
}

}  // namespace

std::optional<KnownInputs> KnownInputsFor(const std::string& file,
                                          const xla::ProgramShapeProto& program,
                                          int cores) {
  auto table = Tables().find(file);
  if (table == Tables().end() || program.parameters_size() != 6) {
    return std::nullopt;
  }
  const RowCounts sizes = table->second();
  const int n = static_cast<int>(sizes.size());
  const int updates = static_cast<int>(sizes[0][0].size());
  absl::StatusOr<Shape> input_shape = Shape::FromProto(program.parameters(0));
  absl::StatusOr<Shape> output_shape = Shape::FromProto(program.parameters(1));
  absl::StatusOr<Shape> offsets_shape = Shape::FromProto(program.parameters(2));
  if (!input_shape.ok() || !output_shape.ok() || !offsets_shape.ok() ||
      n != cores || input_shape->element_type() != xla::F32 ||
      output_shape->element_type() != xla::F32 ||
      offsets_shape->element_count() != int64_t{n} * updates) {
    return std::nullopt;
  }
  int64_t row = 1;
  for (size_t d = 1; d < output_shape->dimensions().size(); ++d) {
    row *= output_shape->dimensions()[d];
  }
  // Offsets: the sender's rows for (peer, update) one after another, and
  // the receiver's rows from (sender, update) one after another.
  auto idx = [&](int peer, int k) { return peer * updates + k; };
  std::vector<std::vector<int64_t>> input_offsets(n), send_sizes(n),
      output_offsets(n), recv_sizes(n);
  for (int i = 0; i < n; ++i) {
    input_offsets[i].resize(n * updates);
    send_sizes[i].resize(n * updates);
    output_offsets[i].resize(n * updates);
    recv_sizes[i].resize(n * updates);
  }
  for (int i = 0; i < n; ++i) {
    int64_t at = 0;
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < updates; ++k) {
        input_offsets[i][idx(j, k)] = at;
        send_sizes[i][idx(j, k)] = sizes[i][j][k];
        at += sizes[i][j][k];
      }
    }
  }
  for (int j = 0; j < n; ++j) {
    int64_t at = 0;
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < updates; ++k) {
        output_offsets[i][idx(j, k)] = at;  // in receiver j, set by sender i
        recv_sizes[j][idx(i, k)] = sizes[i][j][k];
        at += sizes[i][j][k];
      }
    }
  }
  KnownInputs known;
  std::vector<Literal> inputs, outputs;
  for (int i = 0; i < n; ++i) {
    inputs.push_back(Literal::Zeros(*input_shape));
    Literal out = Literal::Uninitialized(*output_shape);
    for (float& v : out.mutable_data<float>()) v = -1;
    outputs.push_back(std::move(out));
  }
  const Literal initial_output = outputs[0];
  // Every row of every update gets its own exact values.
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      for (int k = 0; k < updates; ++k) {
        const int64_t chunk = (int64_t{i} * n + j) * updates + k;
        for (int64_t r = 0; r < sizes[i][j][k]; ++r) {
          for (int64_t e = 0; e < row; ++e) {
            const float value =
                static_cast<float>(1 + chunk * 4096 + r * row + e);
            inputs[i]
                .mutable_data<float>()[(input_offsets[i][idx(j, k)] + r) * row +
                                       e] = value;
            outputs[j].mutable_data<float>()
                [(output_offsets[i][idx(j, k)] + r) * row + e] = value;
          }
        }
      }
    }
  }
  const xla::PrimitiveType type = offsets_shape->element_type();
  for (int i = 0; i < n; ++i) {
    std::vector<Literal> args;
    args.push_back(inputs[i]);
    args.push_back(initial_output);
    args.push_back(Metadata(type, input_offsets[i]));
    args.push_back(Metadata(type, send_sizes[i]));
    args.push_back(Metadata(type, output_offsets[i]));
    args.push_back(Metadata(type, recv_sizes[i]));
    known.arguments.push_back(std::move(args));
    known.expected.push_back(outputs[i]);
  }
  return known;
}

}  // namespace tpu
