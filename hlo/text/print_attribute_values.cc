// Values of the structured attributes: metadata, frontend attributes,
// windows, convolution dim_labels, replica groups and backend configs; and
// the small text helpers the printer shares. Shardings are in
// print_sharding.cc.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "hlo/text/printer_internal.h"

namespace tpu::hlo::text_internal {

std::string Quoted(absl::string_view s) {
  return absl::StrCat("\"", absl::CEscape(s), "\"");
}

std::string PrintMetadata(const xla::OpMetadata& m) {
  std::vector<std::string> parts;
  if (!m.op_type().empty())
    parts.push_back(absl::StrCat("op_type=", Quoted(m.op_type())));
  if (!m.op_name().empty())
    parts.push_back(absl::StrCat("op_name=", Quoted(m.op_name())));
  if (!m.source_file().empty()) {
    parts.push_back(absl::StrCat("source_file=", Quoted(m.source_file())));
  }
  if (m.source_line() != 0)
    parts.push_back(absl::StrCat("source_line=", m.source_line()));
  if (m.source_end_line() != 0) {
    parts.push_back(absl::StrCat("source_end_line=", m.source_end_line()));
  }
  if (m.source_column() != 0) {
    parts.push_back(absl::StrCat("source_column=", m.source_column()));
  }
  if (m.source_end_column() != 0) {
    parts.push_back(absl::StrCat("source_end_column=", m.source_end_column()));
  }
  if (m.profile_type_size() > 0) {
    std::vector<std::string> types;
    for (int t : m.profile_type()) {
      types.push_back(xla::ProfileType_Name(static_cast<xla::ProfileType>(t)));
    }
    parts.push_back(
        absl::StrCat("profile_type={", absl::StrJoin(types, ","), "}"));
  }
  if (m.creation_pass_id() != 0) {
    parts.push_back(absl::StrCat("creation_pass_id=", m.creation_pass_id()));
  }
  if (m.logical_creation_pass_id() != 0) {
    parts.push_back(absl::StrCat("logical_creation_pass_id=",
                                 m.logical_creation_pass_id()));
  }
  if (m.size_of_generated_code_in_bytes() != 0) {
    parts.push_back(absl::StrCat("size_of_generated_code_in_bytes=",
                                 m.size_of_generated_code_in_bytes()));
  }
  if (m.size_of_memory_working_set_in_bytes() != 0) {
    parts.push_back(absl::StrCat("size_of_memory_working_set_in_bytes=",
                                 m.size_of_memory_working_set_in_bytes()));
  }
  if (!m.deduplicated_name().empty()) {
    parts.push_back(
        absl::StrCat("deduplicated_name=", Quoted(m.deduplicated_name())));
  }
  if (m.stack_frame_id() != 0) {
    parts.push_back(absl::StrCat("stack_frame_id=", m.stack_frame_id()));
  }
  if (!m.scheduling_name().empty()) {
    parts.push_back(
        absl::StrCat("scheduling_name=", Quoted(m.scheduling_name())));
  }
  return absl::StrCat("{", absl::StrJoin(parts, " "), "}");
}

std::string PrintFrontendAttributes(const xla::FrontendAttributes& attributes) {
  std::vector<std::pair<std::string, std::string>> sorted(
      attributes.map().begin(), attributes.map().end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> parts;
  for (const auto& [key, value] : sorted) {
    bool plain = !key.empty();
    for (char c : key) plain &= absl::ascii_isalnum(c) || c == '_' || c == '.';
    parts.push_back(
        absl::StrCat(plain ? key : Quoted(key), "=", Quoted(value)));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

std::string PrintWindow(const xla::Window& window) {
  std::vector<std::string> parts;
  auto join = [&](auto get) {
    std::vector<std::string> values;
    for (const auto& d : window.dimensions()) values.push_back(get(d));
    return absl::StrJoin(values, "x");
  };
  auto any = [&](auto pred) {
    for (const auto& d : window.dimensions()) {
      if (pred(d)) return true;
    }
    return false;
  };
  using Dim = xla::WindowDimension;
  if (window.dimensions_size() > 0) {
    parts.push_back("size=" +
                    join([](const Dim& d) { return absl::StrCat(d.size()); }));
  }
  if (any([](const Dim& d) { return d.stride() != 1; })) {
    parts.push_back("stride=" + join([](const Dim& d) {
                      return absl::StrCat(d.stride());
                    }));
  }
  if (any([](const Dim& d) {
        return d.padding_low() != 0 || d.padding_high() != 0;
      })) {
    parts.push_back("pad=" + join([](const Dim& d) {
                      return absl::StrCat(d.padding_low(), "_",
                                          d.padding_high());
                    }));
  }
  if (any([](const Dim& d) { return d.base_dilation() != 1; })) {
    parts.push_back("lhs_dilate=" + join([](const Dim& d) {
                      return absl::StrCat(d.base_dilation());
                    }));
  }
  if (any([](const Dim& d) { return d.window_dilation() != 1; })) {
    parts.push_back("rhs_dilate=" + join([](const Dim& d) {
                      return absl::StrCat(d.window_dilation());
                    }));
  }
  if (any([](const Dim& d) { return d.window_reversal(); })) {
    parts.push_back("rhs_reversal=" + join([](const Dim& d) {
                      return std::string(d.window_reversal() ? "1" : "0");
                    }));
  }
  return absl::StrCat("{", absl::StrJoin(parts, " "), "}");
}

std::string PrintDimLabels(const xla::ConvolutionDimensionNumbers& d) {
  auto labels = [](int64_t a, char ca, int64_t b, char cb,
                   const google::protobuf::RepeatedField<int64_t>& spatial) {
    const int rank = 2 + spatial.size();
    std::string s(rank, '?');
    if (a >= 0 && a < rank) s[a] = ca;
    if (b >= 0 && b < rank) s[b] = cb;
    for (int i = 0; i < spatial.size(); ++i) {
      if (spatial[i] >= 0 && spatial[i] < rank)
        s[spatial[i]] = static_cast<char>('0' + i);
    }
    return s;
  };
  return absl::StrCat(
      labels(d.input_batch_dimension(), 'b', d.input_feature_dimension(), 'f',
             d.input_spatial_dimensions()),
      "_",
      labels(d.kernel_input_feature_dimension(), 'i',
             d.kernel_output_feature_dimension(), 'o',
             d.kernel_spatial_dimensions()),
      "->",
      labels(d.output_batch_dimension(), 'b', d.output_feature_dimension(), 'f',
             d.output_spatial_dimensions()));
}

std::string PrintReplicaGroups(
    const google::protobuf::RepeatedPtrField<xla::ReplicaGroup>& groups) {
  std::vector<std::string> parts;
  for (const auto& g : groups) parts.push_back(IntList(g.replica_ids()));
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

std::string LowerEnumName(const std::string& name, absl::string_view prefix) {
  absl::string_view view = name;
  if (absl::StartsWith(view, prefix)) view.remove_prefix(prefix.size());
  return absl::AsciiStrToLower(view);
}

std::string PrintBackendConfig(const std::string& config) {
  bool raw = !config.empty() && config.front() == '{' && config.back() == '}';
  if (raw) {
    // Raw only if braces balance outside strings and nothing follows.
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < config.size() && raw; ++i) {
      const char c = config[i];
      if (in_string) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[' || c == '(') {
        ++depth;
      } else if (c == '}' || c == ']' || c == ')') {
        if (--depth == 0 && i + 1 != config.size()) raw = false;
        if (depth < 0) raw = false;
      } else if (c == '\n') {
        raw = false;
      }
    }
    raw = raw && depth == 0 && !in_string;
  }
  return raw ? config : Quoted(config);
}

}  // namespace tpu::hlo::text_internal
