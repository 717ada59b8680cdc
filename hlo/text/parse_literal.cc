// Literals inside constant(...): scalars, nested arrays "{{1, 2}, {3, 4}}",
// tuples "(1, {2, 3})", complex "(1, -2)", elided "{...}", and numbers
// including inf, nan and nan(0x<payload>).

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/hlo_text_util.h"
#include "hlo/text/literal_storage.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {
namespace {

// Most memory the values of an elided literal may take (1 GiB): they are
// made up while parsing, so a few characters must not ask for more, and a
// LiteralProto field holds fewer than 2^31 bytes.
constexpr int64_t kMaxElidedBytes = int64_t{1} << 30;

// Bytes per value in the LiteralProto an elided literal fills (pred and the
// narrow types take one byte each).
int64_t ElidedBytesPerValue(xla::PrimitiveType type) {
  return std::max(1, TypeBitWidth(type) / 8);
}

// "nan" or "nan(0x<payload>)" after the sign; false if the payload is bad.
bool ParseNan(absl::string_view body, bool negative, double* value,
              float* single) {
  uint64_t payload = 0;
  bool has_payload = false;
  if (body.size() > 3) {
    absl::string_view hex = body.substr(4, body.size() - 5);
    if (absl::StartsWith(hex, "0x") || absl::StartsWith(hex, "0X")) {
      hex.remove_prefix(2);
    }
    auto result =
        std::from_chars(hex.data(), hex.data() + hex.size(), payload, 16);
    if (result.ec != std::errc() || result.ptr != hex.data() + hex.size() ||
        payload == 0) {
      return false;
    }
    has_payload = true;
  }
  uint64_t bits64 = 0x7ff8000000000000ull;
  uint32_t bits32 = 0x7fc00000u;
  if (has_payload) {
    bits64 = 0x7ff0000000000000ull | (payload & 0xfffffffffffffull);
    bits32 = 0x7f800000u | static_cast<uint32_t>(payload & 0x7fffff);
  }
  if (negative) {
    bits64 |= 1ull << 63;
    bits32 |= 1u << 31;
  }
  std::memcpy(value, &bits64, 8);
  std::memcpy(single, &bits32, 4);
  return true;
}

// A finite decimal or hexadecimal number without its sign; false if the text
// is not one. Overflow reads as infinity, underflow as zero (like strtod).
bool ParseFiniteNumber(absl::string_view unsigned_text, bool negative,
                       bool wide, double* value, float* single) {
  const bool hex = absl::StartsWith(unsigned_text, "0x") ||
                   absl::StartsWith(unsigned_text, "0X");
  std::chars_format format = std::chars_format::general;
  if (hex) {
    unsigned_text.remove_prefix(2);
    format = std::chars_format::hex;
  }
  const char* first = unsigned_text.data();
  const char* last = first + unsigned_text.size();
  std::from_chars_result result;
  if (wide) {
    result = std::from_chars(first, last, *value, format);
    if (negative) *value = -*value;
    *single = static_cast<float>(*value);
  } else {
    // f32 and narrower types read as float directly (no double rounding for
    // f32; f16/bf16/f8 values printed by XLA are exact floats).
    result = std::from_chars(first, last, *single, format);
    if (negative) *single = -*single;
    *value = *single;
  }
  if (result.ec == std::errc::result_out_of_range) {
    const bool tiny =
        unsigned_text.find_first_of("eEpP") != absl::string_view::npos &&
        unsigned_text.find('-') != absl::string_view::npos;
    const double magnitude = tiny ? 0.0 : HUGE_VAL;
    *value = negative ? -magnitude : magnitude;
    *single = static_cast<float>(*value);
    return true;
  }
  return result.ec == std::errc() && result.ptr == last;
}

}  // namespace

absl::Status Parser::ParseFloatValue(xla::PrimitiveType type, double* value,
                                     float* single) {
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  absl::string_view text = lexer_.ConsumeNumber();
  if (text.empty()) return Expected("number");
  const bool negative = text[0] == '-';
  absl::string_view body =
      text.substr(text[0] == '-' || text[0] == '+' ? 1 : 0);
  if (body == "inf") {
    *value = negative ? -HUGE_VAL : HUGE_VAL;
    *single = static_cast<float>(*value);
    return absl::OkStatus();
  }
  if (absl::StartsWith(body, "nan")) {
    if (!ParseNan(body, negative, value, single)) {
      return ErrorAt(at, "bad NaN payload");
    }
    return absl::OkStatus();
  }
  const bool wide = type == xla::F64 || type == xla::C128;
  if (!ParseFiniteNumber(body, negative, wide, value, single)) {
    return ErrorAt(at, absl::StrCat("expected number, got '", text, "'"));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseElement(xla::PrimitiveType type,
                                  xla::LiteralProto* literal) {
  lexer_.SkipSpace();
  const size_t at = lexer_.pos();
  if (type == xla::PRED) {
    absl::string_view word = lexer_.ConsumeWord();
    if (word == "true" || word == "1") {
      literal->add_preds(true);
    } else if (word == "false" || word == "0") {
      literal->add_preds(false);
    } else {
      lexer_.set_pos(at);
      return Expected("'true' or 'false'");
    }
    return absl::OkStatus();
  }
  if (IsComplexType(type)) {
    HLO_RETURN_IF_ERROR(Expect('('));
    double re, im;
    float re32, im32;
    HLO_RETURN_IF_ERROR(ParseFloatValue(type, &re, &re32));
    HLO_RETURN_IF_ERROR(Expect(','));
    HLO_RETURN_IF_ERROR(ParseFloatValue(type, &im, &im32));
    HLO_RETURN_IF_ERROR(Expect(')'));
    if (type == xla::C64) {
      literal->add_c64s(re32);
      literal->add_c64s(im32);
    } else {
      literal->add_c128s(re);
      literal->add_c128s(im);
    }
    return absl::OkStatus();
  }
  if (IsFloatType(type)) {
    double v;
    float single;
    HLO_RETURN_IF_ERROR(ParseFloatValue(type, &v, &single));
    StoreValue(type, v, single, 0, 0, literal);
    return absl::OkStatus();
  }
  return ParseIntegerElement(type, literal);
}

absl::Status Parser::ParseIntegerElement(xla::PrimitiveType type,
                                         xla::LiteralProto* literal) {
  const size_t at = lexer_.pos();
  absl::string_view text = lexer_.ConsumeNumber();
  if (text.empty()) return Expected("integer");
  const int bits = IntBitWidth(type);
  int64_t i = 0;
  uint64_t u = 0;
  absl::string_view digits = text;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  const char* end = digits.data() + digits.size();
  auto out_of_range = [&] {
    return ErrorAt(at, absl::StrCat("value ", text, " out of range for ",
                                    PrimitiveTypeName(type)));
  };
  if (IsSignedIntType(type)) {
    auto result = std::from_chars(digits.data(), end, i);
    if (result.ec != std::errc() || result.ptr != end) {
      return ErrorAt(at, absl::StrCat("expected integer, got '", text, "'"));
    }
    const int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max()
                                   : (int64_t{1} << (bits - 1)) - 1;
    const int64_t min =
        bits == 64 ? std::numeric_limits<int64_t>::min() : -max - 1;
    if (i < min || i > max) return out_of_range();
    u = static_cast<uint64_t>(i);
  } else {
    auto result = std::from_chars(digits.data(), end, u);
    if (result.ec != std::errc() || result.ptr != end) {
      return ErrorAt(
          at, absl::StrCat("expected unsigned integer, got '", text, "'"));
    }
    if (bits < 64 && u > (uint64_t{1} << bits) - 1) return out_of_range();
    i = static_cast<int64_t>(u);
  }
  StoreValue(type, 0, 0, i, u, literal);
  return absl::OkStatus();
}

absl::Status Parser::ParseArrayElements(const xla::ShapeProto& shape, int dim,
                                        xla::LiteralProto* literal) {
  NestingScope nesting(this);
  HLO_RETURN_IF_ERROR(nesting.status());
  HLO_RETURN_IF_ERROR(Expect('{'));
  const int64_t n = shape.dimensions(dim);
  const bool innermost = dim + 1 == shape.dimensions_size();
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) HLO_RETURN_IF_ERROR(Expect(','));
    if (innermost) {
      HLO_RETURN_IF_ERROR(ParseElement(shape.element_type(), literal));
    } else {
      HLO_RETURN_IF_ERROR(ParseArrayElements(shape, dim + 1, literal));
    }
  }
  return Expect('}');
}

absl::Status Parser::SkipRepeatedShape() {
  if (!StartsArrayShape()) return absl::OkStatus();
  xla::ShapeProto declared;
  return ParseShape(&declared);
}

absl::Status Parser::ParseLiteral(const xla::ShapeProto& shape,
                                  xla::LiteralProto* literal) {
  *literal->mutable_shape() = shape;
  const xla::PrimitiveType type = shape.element_type();
  if (type == xla::TUPLE) {
    NestingScope nesting(this);
    HLO_RETURN_IF_ERROR(nesting.status());
    HLO_RETURN_IF_ERROR(Expect('('));
    for (int i = 0; i < shape.tuple_shapes_size(); ++i) {
      if (i > 0) HLO_RETURN_IF_ERROR(Expect(','));
      HLO_RETURN_IF_ERROR(
          ParseLiteral(shape.tuple_shapes(i), literal->add_tuple_literals()));
    }
    return Expect(')');
  }
  if (!IsArrayType(type)) {
    return Expected(
        absl::StrCat("no literal for type ", PrimitiveTypeName(type)));
  }
  // Old XLA repeated the shape inside the literal: "f32[2] {1, 2}".
  HLO_RETURN_IF_ERROR(SkipRepeatedShape());
  const int64_t count = ElementCount(shape);
  // Elided: "{...}".
  if (lexer_.Peek() == '{') {
    const size_t brace = lexer_.pos();
    lexer_.set_pos(brace + 1);
    if (lexer_.TryConsume("...")) {
      HLO_RETURN_IF_ERROR(Expect('}'));
      // Elided values are made up here, so a few characters may ask for
      // any amount of memory: refused beyond what a LiteralProto holds.
      if (count < 0) {
        // ElementCount is negative for an unbounded dimension ('?') and on
        // overflow: no number of elements to make up.
        return ErrorAt(brace,
                       "an elided literal ({...}) needs a shape with a known "
                       "element count; this one has an unbounded ('?') "
                       "dimension or too many elements");
      }
      const int64_t width = ElidedBytesPerValue(type);
      if (count > kMaxElidedBytes / width) {
        return ErrorAt(brace,
                       absl::StrCat("an elided literal ({...}) of ", count,
                                    " elements (", PrimitiveTypeName(type),
                                    "); at most ", kMaxElidedBytes,
                                    " bytes (1 GiB) of values are made up"));
      }
      FillElided(type, count, literal);
      return absl::OkStatus();
    }
    lexer_.set_pos(brace);
  }
  // Every element written out takes at least one character, so the text left
  // bounds what is worth reserving whatever the shape claims.
  ReserveElements(
      type,
      std::min<int64_t>(
          count, static_cast<int64_t>(lexer_.text().size() - lexer_.pos())),
      literal);
  if (shape.dimensions_size() == 0) {
    HLO_RETURN_IF_ERROR(ParseElement(type, literal));
  } else {
    HLO_RETURN_IF_ERROR(ParseArrayElements(shape, 0, literal));
  }
  PermuteToLayout(shape, literal);
  return absl::OkStatus();
}

}  // namespace tpu::hlo::text_internal
