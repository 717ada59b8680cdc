// Values of the structured instruction attributes: slices, windows,
// convolution dim_labels, padding, metadata, frontend attributes,
// statistics, sparsity, domains, result accuracy and backend configs.
// Shardings and replica groups are in parse_sharding.cc.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {
namespace {

// The parts of a window attribute, each "AxBxC"; empty when absent.
struct WindowParts {
  std::vector<int64_t> size, stride, lhs_dilate, rhs_dilate, reversal;
  std::vector<int64_t> pad_low, pad_high;
  bool has_size = false;
};

// False if the parts have different ranks.
bool BuildWindow(const WindowParts& w, xla::Window* window) {
  const size_t rank = w.size.size();
  auto fits = [&](const std::vector<int64_t>& v) {
    return v.empty() || v.size() == rank;
  };
  if (!fits(w.stride) || !fits(w.lhs_dilate) || !fits(w.rhs_dilate) ||
      !fits(w.reversal) || !fits(w.pad_low)) {
    return false;
  }
  auto at = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return v.empty() ? fallback : v[i];
  };
  for (size_t i = 0; i < rank; ++i) {
    auto* dim = window->add_dimensions();
    dim->set_size(w.size[i]);
    dim->set_stride(at(w.stride, i, 1));
    dim->set_padding_low(at(w.pad_low, i, 0));
    dim->set_padding_high(at(w.pad_high, i, 0));
    dim->set_base_dilation(at(w.lhs_dilate, i, 1));
    dim->set_window_dilation(at(w.rhs_dilate, i, 1));
    dim->set_window_reversal(at(w.reversal, i, 0) != 0);
  }
  return true;
}

// One part of dim_labels ("b01f"): the positions of the two named
// dimensions and of spatial dimensions 0..n-1 ('?' marks an unused one).
bool ParseLabels(absl::string_view labels, char a, char b, int spatial,
                 int64_t* pa, int64_t* pb,
                 google::protobuf::RepeatedField<int64_t>* dims) {
  dims->Resize(spatial, -1);
  int found = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const char c = labels[i];
    if (c == a) {
      *pa = static_cast<int64_t>(i);
      found |= 1;
    } else if (c == b) {
      *pb = static_cast<int64_t>(i);
      found |= 2;
    } else if (c >= '0' && c <= '9' && c - '0' < spatial &&
               dims->Get(c - '0') == -1) {
      dims->Set(c - '0', static_cast<int64_t>(i));
    } else if (c != '?') {
      return false;
    }
  }
  if (found != 3) return false;
  for (int64_t d : *dims) {
    if (d < 0) return false;
  }
  return true;
}

// Metadata keys with a string or an integer value.
struct MetadataField {
  absl::string_view key;
  std::string* (*string_field)(xla::OpMetadata&);
  void (*set_int)(xla::OpMetadata&, int64_t);
};

const MetadataField* FindMetadataField(absl::string_view key) {
  using M = xla::OpMetadata;
  static const MetadataField kFields[] = {
      {"op_type", [](M& m) { return m.mutable_op_type(); }, nullptr},
      {"op_name", [](M& m) { return m.mutable_op_name(); }, nullptr},
      {"source_file", [](M& m) { return m.mutable_source_file(); }, nullptr},
      {"deduplicated_name", [](M& m) { return m.mutable_deduplicated_name(); },
       nullptr},
      {"scheduling_name", [](M& m) { return m.mutable_scheduling_name(); },
       nullptr},
      {"source_line", nullptr,
       [](M& m, int64_t v) { m.set_source_line(static_cast<int32_t>(v)); }},
      {"source_end_line", nullptr,
       [](M& m, int64_t v) { m.set_source_end_line(static_cast<int32_t>(v)); }},
      {"source_column", nullptr,
       [](M& m, int64_t v) { m.set_source_column(static_cast<int32_t>(v)); }},
      {"source_end_column", nullptr,
       [](M& m, int64_t v) {
         m.set_source_end_column(static_cast<int32_t>(v));
       }},
      {"stack_frame_id", nullptr,
       [](M& m, int64_t v) { m.set_stack_frame_id(static_cast<int32_t>(v)); }},
      {"size_of_generated_code_in_bytes", nullptr,
       [](M& m, int64_t v) { m.set_size_of_generated_code_in_bytes(v); }},
      {"size_of_memory_working_set_in_bytes", nullptr,
       [](M& m, int64_t v) { m.set_size_of_memory_working_set_in_bytes(v); }},
      {"creation_pass_id", nullptr,
       [](M& m, int64_t v) { m.set_creation_pass_id(v); }},
      {"logical_creation_pass_id", nullptr,
       [](M& m, int64_t v) { m.set_logical_creation_pass_id(v); }},
  };
  for (const MetadataField& field : kFields) {
    if (field.key == key) return &field;
  }
  return nullptr;
}

}  // namespace

absl::Status Parser::ParseSlices(xla::HloInstructionProto* proto) {
  // {[start:limit], [start:limit:stride], ...}
  return ParseBracedList([&]() -> absl::Status {
    auto* slice = proto->add_slice_dimensions();
    int64_t value;
    HLO_RETURN_IF_ERROR(Expect('['));
    HLO_RETURN_IF_ERROR(ParseInt(&value));
    slice->set_start(value);
    HLO_RETURN_IF_ERROR(Expect(':'));
    HLO_RETURN_IF_ERROR(ParseInt(&value));
    slice->set_limit(value);
    slice->set_stride(1);
    if (lexer_.TryConsume(':')) {
      HLO_RETURN_IF_ERROR(ParseInt(&value));
      slice->set_stride(value);
    }
    return Expect(']');
  });
}

absl::Status Parser::ParseWindow(xla::Window* window) {
  // {size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=.. rhs_dilate=..
  //  rhs_reversal=..}
  HLO_RETURN_IF_ERROR(Expect('{'));
  WindowParts w;
  const size_t start = lexer_.pos();
  while (!lexer_.TryConsume('}')) {
    lexer_.SkipSpace();
    const size_t at = lexer_.pos();
    absl::string_view key = lexer_.ConsumeWord();
    HLO_RETURN_IF_ERROR(Expect('='));
    lexer_.SkipSpace();
    if (key == "size") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &w.size));
      w.has_size = true;
    } else if (key == "stride") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &w.stride));
    } else if (key == "lhs_dilate") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &w.lhs_dilate));
    } else if (key == "rhs_dilate") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &w.rhs_dilate));
    } else if (key == "rhs_reversal") {
      HLO_RETURN_IF_ERROR(ParseSeparatedInts('x', &w.reversal));
    } else if (key == "pad") {
      w.pad_low.clear();
      w.pad_high.clear();
      HLO_RETURN_IF_ERROR(ParseSeparated('x', [&]() -> absl::Status {
        int64_t low, high;
        HLO_RETURN_IF_ERROR(ParseInt(&low));
        if (!lexer_.TryConsumeRaw('_')) return Expected("'_'");
        HLO_RETURN_IF_ERROR(ParseInt(&high));
        w.pad_low.push_back(low);
        w.pad_high.push_back(high);
        return absl::OkStatus();
      }));
    } else {
      return ExpectedAt(at,
                        "window attribute (size, stride, pad, lhs_dilate, "
                        "rhs_dilate, rhs_reversal)");
    }
  }
  if (!w.has_size && (w.stride.size() + w.pad_low.size() + w.lhs_dilate.size() +
                      w.rhs_dilate.size() + w.reversal.size()) > 0) {
    return ErrorAt(start, "window has no size");
  }
  if (!BuildWindow(w, window)) {
    return ErrorAt(start, "window attributes have different ranks");
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseDimLabels(xla::ConvolutionDimensionNumbers* dnums) {
  // input_kernel->output, e.g. b01f_01io->b01f.
  lexer_.SkipSpace();
  const size_t start = lexer_.pos();
  absl::string_view text = lexer_.text().substr(start);
  const size_t underscore = text.find('_');
  const size_t arrow = text.find("->");
  if (underscore == absl::string_view::npos ||
      arrow == absl::string_view::npos || arrow < underscore) {
    return ExpectedAt(start, "dim_labels like 'b01f_01io->b01f'");
  }
  size_t out_end = arrow + 2;
  while (out_end < text.size() &&
         (absl::ascii_isalnum(text[out_end]) || text[out_end] == '?')) {
    ++out_end;
  }
  absl::string_view input = text.substr(0, underscore);
  absl::string_view kernel =
      text.substr(underscore + 1, arrow - underscore - 1);
  absl::string_view output = text.substr(arrow + 2, out_end - arrow - 2);
  auto bad = [&](absl::string_view what) {
    return ErrorAt(start, absl::StrCat("bad dim_labels: ", what));
  };
  if (input.size() < 2 || input.size() != kernel.size() ||
      input.size() != output.size()) {
    return bad("input, kernel and output must have the same rank >= 2");
  }
  const int spatial = static_cast<int>(input.size()) - 2;
  int64_t batch = 0, feature = 0, in_feature = 0, out_feature = 0;
  int64_t out_batch = 0, out_out_feature = 0;
  if (!ParseLabels(input, 'b', 'f', spatial, &batch, &feature,
                   dnums->mutable_input_spatial_dimensions())) {
    return bad("input labels need b, f and spatial dimensions 0..n-1");
  }
  if (!ParseLabels(kernel, 'i', 'o', spatial, &in_feature, &out_feature,
                   dnums->mutable_kernel_spatial_dimensions())) {
    return bad("kernel labels need i, o and spatial dimensions 0..n-1");
  }
  if (!ParseLabels(output, 'b', 'f', spatial, &out_batch, &out_out_feature,
                   dnums->mutable_output_spatial_dimensions())) {
    return bad("output labels need b, f and spatial dimensions 0..n-1");
  }
  dnums->set_input_batch_dimension(batch);
  dnums->set_input_feature_dimension(feature);
  dnums->set_kernel_input_feature_dimension(in_feature);
  dnums->set_kernel_output_feature_dimension(out_feature);
  dnums->set_output_batch_dimension(out_batch);
  dnums->set_output_feature_dimension(out_out_feature);
  lexer_.set_pos(start + out_end);
  return absl::OkStatus();
}

absl::Status Parser::ParsePadding(xla::PaddingConfig* padding) {
  // low_high[_interior] per dimension, joined by 'x'.
  lexer_.SkipSpaceOnLine();
  const char c = lexer_.PeekRaw();
  if (!(c == '-' || (c >= '0' && c <= '9'))) {
    return absl::OkStatus();  // Rank 0: "padding=" with nothing after it.
  }
  return ParseSeparated('x', [&]() -> absl::Status {
    std::vector<int64_t> parts;
    HLO_RETURN_IF_ERROR(ParseSeparatedInts('_', &parts));
    if (parts.size() != 2 && parts.size() != 3) {
      return Expected("padding 'low_high' or 'low_high_interior'");
    }
    auto* dim = padding->add_dimensions();
    dim->set_edge_padding_low(parts[0]);
    dim->set_edge_padding_high(parts[1]);
    dim->set_interior_padding(parts.size() == 3 ? parts[2] : 0);
    return absl::OkStatus();
  });
}

absl::Status Parser::ParseMetadata(xla::OpMetadata* metadata) {
  // {op_type="..." op_name="..." source_line=12 profile_type={...} ...}
  return ParseKeyValues(
      "metadata attribute or '}'",
      [&](absl::string_view key, size_t) -> absl::Status {
        const MetadataField* field = FindMetadataField(key);
        if (field != nullptr && field->string_field != nullptr) {
          return ParseString(field->string_field(*metadata));
        }
        if (field != nullptr) {
          int64_t value;
          HLO_RETURN_IF_ERROR(ParseInt(&value));
          field->set_int(*metadata, value);
          return absl::OkStatus();
        }
        if (key != "profile_type") return SkipValue();
        HLO_RETURN_IF_ERROR(Expect('{'));
        while (!lexer_.TryConsume('}')) {
          xla::ProfileType type{};
          HLO_RETURN_IF_ERROR(
              ParseEnum(xla::ProfileType_descriptor(), "", &type));
          metadata->add_profile_type(type);
          lexer_.TryConsume(',');
        }
        return absl::OkStatus();
      });
}

absl::Status Parser::ParseFrontendAttributes(
    xla::FrontendAttributes* attributes) {
  // {key="value", "quoted key"=value, key={raw braces}}
  HLO_RETURN_IF_ERROR(Expect('{'));
  while (!lexer_.TryConsume('}')) {
    std::string key;
    if (lexer_.Peek() == '"') {
      HLO_RETURN_IF_ERROR(ParseString(&key));
    } else {
      absl::string_view word = lexer_.ConsumeWord();
      if (word.empty()) return Expected("attribute name or '}'");
      key = std::string(word);
    }
    HLO_RETURN_IF_ERROR(Expect('='));
    std::string value;
    if (lexer_.Peek() == '"') {
      HLO_RETURN_IF_ERROR(ParseString(&value));
    } else if (lexer_.Peek() == '{') {
      const size_t at = lexer_.pos();
      if (!lexer_.SkipBalanced()) return ErrorAt(at, "unbalanced value");
      value = std::string(lexer_.text().substr(at, lexer_.pos() - at));
    } else {
      absl::string_view word = lexer_.ConsumeWord();
      if (word.empty()) return Expected("attribute value");
      value = std::string(word);
    }
    (*attributes->mutable_map())[key] = std::move(value);
    if (!lexer_.TryConsume(',') && lexer_.Peek() != '}') {
      return Expected("',' or '}'");
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseStatistics(xla::StatisticsViz* statistics) {
  // {visualizing_index=1, stat0=0.5, ...}
  return ParseKeyValues("statistic name or '}'",
                        [&](absl::string_view key, size_t) -> absl::Status {
                          if (key == "visualizing_index") {
                            int64_t index;
                            HLO_RETURN_IF_ERROR(ParseInt(&index));
                            statistics->set_stat_index_to_visualize(index);
                            return absl::OkStatus();
                          }
                          double value;
                          HLO_RETURN_IF_ERROR(ParseDouble(&value));
                          auto* stat = statistics->add_statistics();
                          stat->set_stat_name(std::string(key));
                          stat->set_stat_val(value);
                          return absl::OkStatus();
                        });
}

absl::Status Parser::ParseSparsity(xla::HloInstructionProto* proto) {
  // L.1@2:4_R.0@2:4
  return ParseSeparated('_', [&]() -> absl::Status {
    lexer_.SkipSpace();
    const char side = lexer_.PeekRaw();
    if (side != 'L' && side != 'R') return Expected("'L' or 'R'");
    lexer_.set_pos(lexer_.pos() + 1);
    HLO_RETURN_IF_ERROR(Expect('.'));
    int64_t dim, n, m;
    HLO_RETURN_IF_ERROR(ParseInt(&dim));
    HLO_RETURN_IF_ERROR(Expect('@'));
    HLO_RETURN_IF_ERROR(ParseInt(&n));
    HLO_RETURN_IF_ERROR(Expect(':'));
    HLO_RETURN_IF_ERROR(ParseInt(&m));
    auto* sparsity = proto->add_dot_sparsity();
    sparsity->set_type(xla::SPARSITY_STRUCTURED_N_M);
    sparsity->set_index(side == 'L' ? 0 : 1);
    sparsity->set_dimension(static_cast<int32_t>(dim));
    sparsity->set_n(static_cast<int32_t>(n));
    sparsity->set_m(static_cast<int32_t>(m));
    return absl::OkStatus();
  });
}

absl::Status Parser::ParseDomain(xla::HloInstructionProto* proto) {
  // {kind="sharding", entry={...}, exit={...}}
  return ParseKeyValues(
      "", [&](absl::string_view key, size_t at) -> absl::Status {
        if (key == "kind") {
          std::string kind;
          return ParseString(&kind);
        }
        if (key == "entry") {
          return ParseSharding(proto->mutable_domain_entry_sharding());
        }
        if (key == "exit") {
          return ParseSharding(proto->mutable_domain_exit_sharding());
        }
        return ExpectedAt(at, "'kind', 'entry' or 'exit'");
      });
}

absl::Status Parser::ParseResultAccuracy(xla::ResultAccuracy* accuracy) {
  // {mode=highest} or {tolerance={atol=0,rtol=0,ulps=1}}
  return ParseKeyValues(
      "", [&](absl::string_view key, size_t at) -> absl::Status {
        if (key == "mode") {
          xla::ResultAccuracy::Mode mode{};
          HLO_RETURN_IF_ERROR(
              ParseEnum(xla::ResultAccuracy::Mode_descriptor(), "", &mode));
          accuracy->set_mode(mode);
          return absl::OkStatus();
        }
        if (key == "tolerance") {
          return ParseTolerance(accuracy->mutable_tolerance());
        }
        return ExpectedAt(at, "'mode' or 'tolerance'");
      });
}

absl::Status Parser::ParseTolerance(xla::ResultAccuracy::Tolerance* tolerance) {
  return ParseKeyValues("",
                        [&](absl::string_view key, size_t at) -> absl::Status {
                          double v;
                          HLO_RETURN_IF_ERROR(ParseDouble(&v));
                          if (key == "atol") {
                            tolerance->set_atol(v);
                          } else if (key == "rtol") {
                            tolerance->set_rtol(v);
                          } else if (key == "ulps") {
                            tolerance->set_ulps(static_cast<int64_t>(v));
                          } else {
                            return ExpectedAt(at, "'atol', 'rtol' or 'ulps'");
                          }
                          return absl::OkStatus();
                        });
}

absl::Status Parser::ParseBackendConfig(std::string* config) {
  if (lexer_.Peek() == '{') {
    // Raw JSON as newer XLA prints it.
    const size_t at = lexer_.pos();
    if (!lexer_.SkipBalanced()) return ErrorAt(at, "unbalanced backend_config");
    config->assign(lexer_.text().data() + at, lexer_.pos() - at);
    return absl::OkStatus();
  }
  return ParseString(config);
}

}  // namespace tpu::hlo::text_internal
