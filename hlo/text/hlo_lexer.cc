#include "hlo/text/hlo_lexer.h"

#include <cctype>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tpu::hlo::text_internal {

void HloLexer::SkipSpace() {
  const size_t n = text_.size();
  while (pos_ < n) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '*') {
      const size_t end = text_.find("*/", pos_ + 2);
      pos_ = end == absl::string_view::npos ? n : end + 2;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '/') {
      const size_t end = text_.find('\n', pos_ + 2);
      pos_ = end == absl::string_view::npos ? n : end + 1;
    } else {
      return;
    }
  }
}

bool HloLexer::SkipSpaceOnLine() {
  const size_t n = text_.size();
  while (pos_ < n) {
    const char c = text_[pos_];
    if (c == '\n') return true;
    if (c == ' ' || c == '\t' || c == '\r') {
      ++pos_;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '*') {
      const size_t end = text_.find("*/", pos_ + 2);
      pos_ = end == absl::string_view::npos ? n : end + 2;
    } else if (c == '/' && pos_ + 1 < n && text_[pos_ + 1] == '/') {
      pos_ = text_.find('\n', pos_ + 2);
      if (pos_ == absl::string_view::npos) pos_ = n;
      return pos_ < n;
    } else {
      return false;
    }
  }
  return true;
}

bool HloLexer::TryConsume(absl::string_view s) {
  SkipSpace();
  if (text_.substr(pos_, s.size()) != s) return false;
  pos_ += s.size();
  return true;
}

size_t HloLexer::NameEnd(size_t start) const {
  size_t end = start;
  const size_t n = text_.size();
  while (end < n) {
    const char c = text_[end];
    if (IsNameChar(c)) {
      ++end;
    } else if (c == '-' && !(end + 1 < n && text_[end + 1] == '>')) {
      ++end;
    } else {
      break;
    }
  }
  return end;
}

bool HloLexer::TryConsumeKeyword(absl::string_view keyword) {
  SkipSpace();
  if (text_.substr(pos_, keyword.size()) != keyword) return false;
  if (NameEnd(pos_) != pos_ + keyword.size()) return false;
  pos_ += keyword.size();
  return true;
}

absl::string_view HloLexer::ConsumeName() {
  SkipSpace();
  size_t start = pos_;
  if (start < text_.size() && text_[start] == '%') ++start;
  // A name starts with a name character other than '-'.
  if (start >= text_.size() || !IsNameChar(text_[start])) return {};
  const size_t end = NameEnd(start);
  pos_ = end;
  return text_.substr(start, end - start);
}

absl::string_view HloLexer::ConsumeWord() {
  SkipSpace();
  if (pos_ >= text_.size() || !IsNameChar(text_[pos_])) return {};
  const size_t start = pos_;
  pos_ = NameEnd(start);
  return text_.substr(start, pos_ - start);
}

absl::string_view HloLexer::ConsumeNumber() {
  SkipSpace();
  const size_t n = text_.size();
  const size_t start = pos_;
  size_t p = pos_;
  if (p < n && (text_[p] == '-' || text_[p] == '+')) ++p;
  auto word_is = [&](size_t at, absl::string_view w) {
    return text_.substr(at, w.size()) == w &&
           (at + w.size() >= n || !IsNameChar(text_[at + w.size()]));
  };
  if (word_is(p, "inf")) {
    pos_ = p + 3;
    return text_.substr(start, pos_ - start);
  }
  if (text_.substr(p, 3) == "nan") {
    size_t q = p + 3;
    if (q < n && text_[q] == '(') {
      const size_t close = text_.find(')', q);
      if (close == absl::string_view::npos) return {};
      q = close + 1;
    } else if (q < n && IsNameChar(text_[q])) {
      return {};
    }
    pos_ = q;
    return text_.substr(start, pos_ - start);
  }
  const bool hex = p + 1 < n && text_[p] == '0' &&
                   (text_[p + 1] == 'x' || text_[p + 1] == 'X');
  size_t q = hex ? p + 2 : p;
  bool digits = false;
  auto is_digit = [&](char c) {
    return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0
               : (c >= '0' && c <= '9');
  };
  while (q < n && is_digit(text_[q])) {
    ++q;
    digits = true;
  }
  if (q < n && text_[q] == '.') {
    ++q;
    while (q < n && is_digit(text_[q])) {
      ++q;
      digits = true;
    }
  }
  if (!digits) return {};
  const char exp_char = hex ? 'p' : 'e';
  if (q < n && (text_[q] == exp_char || text_[q] == exp_char - 32)) {
    size_t e = q + 1;
    if (e < n && (text_[e] == '-' || text_[e] == '+')) ++e;
    size_t digits_start = e;
    while (e < n && text_[e] >= '0' && text_[e] <= '9') ++e;
    if (e > digits_start) q = e;
  }
  pos_ = q;
  return text_.substr(start, pos_ - start);
}

bool HloLexer::ConsumeInt64(int64_t* value) {
  SkipSpace();
  const size_t n = text_.size();
  size_t p = pos_;
  bool negative = false;
  if (p < n && (text_[p] == '-' || text_[p] == '+')) {
    negative = text_[p] == '-';
    ++p;
  }
  uint64_t magnitude = 0;
  const size_t digits_start = p;
  while (p < n && text_[p] >= '0' && text_[p] <= '9') {
    const uint64_t digit = text_[p] - '0';
    if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
      return false;
    }
    magnitude = magnitude * 10 + digit;
    ++p;
  }
  if (p == digits_start) return false;
  const uint64_t limit =
      negative ? (uint64_t{1} << 63) : (uint64_t{1} << 63) - 1;
  if (magnitude > limit) return false;
  *value = negative ? static_cast<int64_t>(0 - magnitude)
                    : static_cast<int64_t>(magnitude);
  pos_ = p;
  return true;
}

bool HloLexer::ConsumeQuoted(absl::string_view* raw) {
  SkipSpace();
  const char quote = PeekRaw();
  if (quote != '"' && quote != '\'') return false;
  const size_t start = pos_ + 1;
  size_t p = start;
  const size_t n = text_.size();
  while (p < n && text_[p] != quote) {
    if (text_[p] == '\\') ++p;
    ++p;
  }
  if (p >= n) {
    pos_ = n;
    return false;
  }
  *raw = text_.substr(start, p - start);
  pos_ = p + 1;
  return true;
}

bool HloLexer::SkipBalanced() {
  int depth = 0;
  const size_t n = text_.size();
  while (pos_ < n) {
    const char c = text_[pos_];
    if (c == '"') {
      absl::string_view ignored;
      if (!ConsumeQuoted(&ignored)) return false;
      if (depth == 0) return true;
      continue;
    }
    if (c == '{' || c == '(' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ')' || c == ']') {
      if (--depth <= 0) {
        ++pos_;
        return depth == 0;
      }
    }
    ++pos_;
  }
  return false;
}

void HloLexer::LineColumn(size_t pos, int* line, int* column) const {
  int l = 1;
  size_t line_start = 0;
  const size_t end = pos < text_.size() ? pos : text_.size();
  for (size_t i = 0; i < end; ++i) {
    if (text_[i] == '\n') {
      ++l;
      line_start = i + 1;
    }
  }
  *line = l;
  *column = static_cast<int>(end - line_start) + 1;
}

std::string HloLexer::DescribeAt(size_t pos) const {
  if (pos >= text_.size()) return "end of input";
  const char c = text_[pos];
  if (c == '\n') return "end of line";
  size_t end = pos;
  if (IsNameChar(c) || c == '%' || c == '-') {
    end = pos + 1;
    while (end < text_.size() && end - pos < 40 &&
           (IsNameChar(text_[end]) || text_[end] == '-')) {
      ++end;
    }
  } else if (c == '"') {
    end = text_.find('"', pos + 1);
    end = end == absl::string_view::npos ? text_.size() : end + 1;
    if (end - pos > 40) end = pos + 40;
  } else {
    end = pos + 1;
  }
  return absl::StrCat("'", text_.substr(pos, end - pos), "'");
}

}  // namespace tpu::hlo::text_internal
