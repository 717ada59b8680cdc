// A cursor over HLO text: skips whitespace and comments, reads the small
// tokens of the HLO grammar (names, numbers, strings, punctuation) as
// string_views into the text, and turns byte offsets into line/column for
// error messages. No allocation on the hot paths.
//
// Thread-compatible: one lexer per parse.

#ifndef HLO_TEXT_HLO_LEXER_H_
#define HLO_TEXT_HLO_LEXER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace tpu::hlo::text_internal {

class HloLexer {
 public:
  // `text` must outlive the lexer and every view it returns.
  explicit HloLexer(absl::string_view text) : text_(text) {}

  HloLexer(const HloLexer&) = delete;
  HloLexer& operator=(const HloLexer&) = delete;

  absl::string_view text() const { return text_; }
  size_t pos() const { return pos_; }
  void set_pos(size_t pos) { pos_ = pos; }

  // Skips spaces, newlines, `/* ... */` and `// ...` comments.
  void SkipSpace();

  // Like SkipSpace but stops at a newline; returns true if one was reached.
  // Used where the end of a line ends a construct (unknown attribute values).
  bool SkipSpaceOnLine();

  // The next character after skipping space, or '\0' at the end.
  char Peek() {
    SkipSpace();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  // The character at the cursor without skipping space ('\0' at the end).
  char PeekRaw() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  char PeekRawAt(size_t offset) const {
    return pos_ + offset < text_.size() ? text_[pos_ + offset] : '\0';
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }

  // Skips space; consumes `c` and returns true if it is next.
  bool TryConsume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  // Consumes `c` if it is at the cursor, without skipping space (for
  // separators inside a token group such as "3x3" or "0_1").
  bool TryConsumeRaw(char c) {
    if (PeekRaw() != c) return false;
    ++pos_;
    return true;
  }
  // Skips space; consumes `s` if the text continues with it.
  bool TryConsume(absl::string_view s);

  // Skips space; consumes the word `keyword` if it is next and is not followed
  // by another name character.
  bool TryConsumeKeyword(absl::string_view keyword);

  // Skips space and reads a name: an optional '%' then
  // [A-Za-z0-9_.$] and '-' (not in "->"), at least one character. Returns
  // the name without '%', or an empty view if there is none (cursor kept).
  absl::string_view ConsumeName();

  // Skips space and reads an attribute key: like a name but without '%'.
  absl::string_view ConsumeWord();

  // Skips space and reads the text of a number: an optional sign, then
  // decimal or hexadecimal digits with optional fraction and exponent, or
  // inf / nan / nan(0x...). Empty view if there is none (cursor kept).
  absl::string_view ConsumeNumber();

  // Skips space and reads a decimal integer with optional sign (no hex: in
  // "0x1" the 'x' separates window sizes). Returns false and keeps the cursor
  // if there is none or it overflows.
  bool ConsumeInt64(int64_t* value);

  // Skips space and reads a string in double or single quotes (XLA's lexer
  // takes both, e.g. mesh axis names 'x') with C escapes. On success
  // `raw` is the text between the quotes, still escaped. Returns false if
  // there is no string or it is unterminated (cursor moved to the problem).
  bool ConsumeQuoted(absl::string_view* raw);

  // Skips a balanced group starting at the cursor ('{', '(' or '[', minding
  // strings). Returns false if it is unbalanced (cursor at the end).
  bool SkipBalanced();

  // Line and column (1-based) of byte offset `pos`.
  void LineColumn(size_t pos, int* line, int* column) const;

  // A short description of the token at `pos` for "got ..." in errors.
  std::string DescribeAt(size_t pos) const;

  static bool IsNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '$';
  }

 private:
  size_t NameEnd(size_t start) const;

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace tpu::hlo::text_internal

#endif  // HLO_TEXT_HLO_LEXER_H_
