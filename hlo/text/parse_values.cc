// Errors and the small values every part of the grammar uses: integers,
// booleans, strings, names and unknown attribute values.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hlo/text/parser_internal.h"

namespace tpu::hlo::text_internal {

absl::Status Parser::ErrorAt(size_t pos, absl::string_view message) const {
  int line, column;
  lexer_.LineColumn(pos, &line, &column);
  return absl::InvalidArgumentError(
      absl::StrCat("line ", line, ", column ", column, ": ", message));
}

absl::Status Parser::Expected(absl::string_view what) {
  lexer_.SkipSpace();
  return ExpectedAt(lexer_.pos(), what);
}

absl::Status Parser::ExpectedAt(size_t pos, absl::string_view what) const {
  return ErrorAt(
      pos, absl::StrCat("expected ", what, ", got ", lexer_.DescribeAt(pos)));
}

absl::Status Parser::Expect(char c) {
  if (lexer_.TryConsume(c)) return absl::OkStatus();
  return Expected(absl::StrCat("'", absl::string_view(&c, 1), "'"));
}

absl::Status Parser::ExpectStr(absl::string_view s) {
  if (lexer_.TryConsume(s)) return absl::OkStatus();
  return Expected(absl::StrCat("'", s, "'"));
}

absl::Status Parser::ParseInt(int64_t* value) {
  if (lexer_.ConsumeInt64(value)) return absl::OkStatus();
  return Expected("integer");
}

absl::Status Parser::ParseBool(bool* value) {
  lexer_.SkipSpace();
  const size_t pos = lexer_.pos();
  absl::string_view word = lexer_.ConsumeWord();
  if (word == "true") {
    *value = true;
  } else if (word == "false") {
    *value = false;
  } else {
    lexer_.set_pos(pos);
    return Expected("'true' or 'false'");
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseString(std::string* value) {
  lexer_.SkipSpace();
  const size_t pos = lexer_.pos();
  absl::string_view raw;
  if (!lexer_.ConsumeQuoted(&raw)) {
    if (lexer_.pos() != pos) return ErrorAt(pos, "unterminated string");
    return Expected("string");
  }
  value->clear();
  // Most strings have no escapes; skip CUnescape's copy for them.
  if (raw.find('\\') == absl::string_view::npos) {
    value->assign(raw.data(), raw.size());
    return absl::OkStatus();
  }
  std::string error;
  if (!absl::CUnescape(raw, value, &error)) {
    return ErrorAt(pos, absl::StrCat("bad escape in string: ", error));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseDouble(double* value) {
  float ignored;
  return ParseFloatValue(xla::F64, value, &ignored);
}

absl::Status Parser::ParseSeparatedInts(char sep, std::vector<int64_t>* out) {
  out->clear();
  return ParseSeparated(sep, [&]() -> absl::Status {
    int64_t v;
    HLO_RETURN_IF_ERROR(ParseInt(&v));
    out->push_back(v);
    return absl::OkStatus();
  });
}

absl::Status Parser::SkipValue() {
  lexer_.SkipSpace();
  const size_t start = lexer_.pos();
  while (true) {
    if (lexer_.SkipSpaceOnLine()) break;
    const char c = lexer_.PeekRaw();
    if (c == '\0' || c == ',' || c == '}' || c == ')') break;
    if (c == '{' || c == '(' || c == '[' || c == '"') {
      const size_t at = lexer_.pos();
      if (!lexer_.SkipBalanced()) {
        return ErrorAt(at, "unbalanced attribute value");
      }
    } else {
      lexer_.set_pos(lexer_.pos() + 1);
    }
  }
  if (lexer_.pos() == start) return Expected("attribute value");
  return absl::OkStatus();
}

absl::Status Parser::ParseNameRef(NameRef* ref) {
  lexer_.SkipSpace();
  ref->pos = lexer_.pos();
  ref->name = lexer_.ConsumeName();
  if (ref->name.empty()) return Expected("name");
  return absl::OkStatus();
}

absl::Status Parser::ParseNameList(std::vector<NameRef>* names) {
  return ParseBracedList([&]() -> absl::Status {
    NameRef ref;
    HLO_RETURN_IF_ERROR(ParseNameRef(&ref));
    names->push_back(ref);
    return absl::OkStatus();
  });
}

}  // namespace tpu::hlo::text_internal
