#include "tools/tpu_run/npy.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tpu {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";

absl::Status HeaderError(absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed .npy header: ", what));
}

// A value of the header dictionary: a string, a bool or a tuple of ints.
struct HeaderValue {
  enum Kind { kString, kBool, kTuple, kList } kind = kString;
  std::string text;
  bool flag = false;
  std::vector<int64_t> ints;
};

// Parses the Python dict literal NumPy writes as the header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::map<std::string, HeaderValue>> Parse() {
    std::map<std::string, HeaderValue> dict;
    SkipSpace();
    if (!Consume('{')) return HeaderError("it does not start with '{'");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      absl::StatusOr<std::string> key = ParseString();
      if (!key.ok()) return key.status();
      SkipSpace();
      if (!Consume(':')) return HeaderError("expected ':' after a key");
      SkipSpace();
      absl::StatusOr<HeaderValue> value = ParseValue();
      if (!value.ok()) return value.status();
      if (!dict.emplace(*key, *std::move(value)).second) {
        return HeaderError(absl::StrCat("key '", *key, "' appears twice"));
      }
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume('}')) break;
      return HeaderError("expected ',' or '}' after a value");
    }
    SkipSpace();
    if (pos_ != text_.size()) return HeaderError("text after the dictionary");
    return dict;
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(text_[pos_])) ++pos_;
  }
  bool Consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool ConsumeWord(absl::string_view word) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }

  absl::StatusOr<std::string> ParseString() {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return HeaderError("expected a quoted string");
    }
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos)
      return HeaderError("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  absl::StatusOr<HeaderValue> ParseValue() {
    HeaderValue value;
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      absl::StatusOr<std::string> s = ParseString();
      if (!s.ok()) return s.status();
      value.kind = HeaderValue::kString;
      value.text = *std::move(s);
      return value;
    }
    if (ConsumeWord("True")) {
      value.kind = HeaderValue::kBool;
      value.flag = true;
      return value;
    }
    if (ConsumeWord("False")) {
      value.kind = HeaderValue::kBool;
      value.flag = false;
      return value;
    }
    if (pos_ < text_.size() && text_[pos_] == '[') {
      // A structured dtype's field list; only its presence matters.
      int depth = 0;
      for (; pos_ < text_.size(); ++pos_) {
        if (text_[pos_] == '[') ++depth;
        if (text_[pos_] == ']' && --depth == 0) break;
      }
      if (!Consume(']')) return HeaderError("unterminated list");
      value.kind = HeaderValue::kList;
      return value;
    }
    if (Consume('(')) {
      value.kind = HeaderValue::kTuple;
      while (true) {
        SkipSpace();
        if (Consume(')')) break;
        size_t start = pos_;
        while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) ++pos_;
        // NumPy 1.x on some platforms wrote dimensions as longs ("3L").
        absl::string_view digits = text_.substr(start, pos_ - start);
        Consume('L');
        int64_t dim;
        if (digits.empty() || !absl::SimpleAtoi(digits, &dim)) {
          return HeaderError("shape must be a tuple of non-negative integers");
        }
        value.ints.push_back(dim);
        SkipSpace();
        if (Consume(',')) continue;
        SkipSpace();
        if (Consume(')')) break;
        return HeaderError("expected ',' or ')' in the shape tuple");
      }
      return value;
    }
    return HeaderError("expected a string, True, False or a tuple");
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

absl::StatusOr<NpyDtype> DtypeFromDescr(absl::string_view descr) {
  if (descr.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported .npy dtype '", descr, "'"));
  }
  char order = descr[0];
  absl::string_view rest = descr;
  if (order == '<' || order == '>' || order == '|' || order == '=') {
    rest = descr.substr(1);
  } else {
    order = '=';
  }
  NpyDtype dtype;
  dtype.kind = rest.empty() ? '?' : rest[0];
  if (rest.size() < 2 || !absl::SimpleAtoi(rest.substr(1), &dtype.item_size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported .npy dtype '", descr, "'"));
  }
  bool known = false;
  switch (dtype.kind) {
    case 'b':
      known = dtype.item_size == 1;
      break;
    case 'i':
    case 'u':
      known = dtype.item_size == 1 || dtype.item_size == 2 ||
              dtype.item_size == 4 || dtype.item_size == 8;
      break;
    case 'f':
      known =
          dtype.item_size == 2 || dtype.item_size == 4 || dtype.item_size == 8;
      break;
    case 'c':
      known = dtype.item_size == 8 || dtype.item_size == 16;
      break;
    default:
      break;
  }
  if (!known) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unsupported .npy dtype '", descr,
        "'; use bool, (u)int8..64, float16/32/64 or complex64/128"));
  }
  if (order == '>' && dtype.item_size > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("big-endian .npy data ('", descr,
                     "') is not supported; re-save it little-endian, e.g. with "
                     "a.astype(a.dtype.newbyteorder('<'))"));
  }
  return dtype;
}

}  // namespace

std::string NpyDtype::Name() const {
  switch (kind) {
    case 'b':
      return "bool";
    case 'i':
      return absl::StrCat("int", item_size * 8);
    case 'u':
      return absl::StrCat("uint", item_size * 8);
    case 'f':
      return absl::StrCat("float", item_size * 8);
    case 'c':
      return absl::StrCat("complex", item_size * 8);
    default:
      return absl::StrCat("?", item_size);
  }
}

std::string NpyDtype::Descr() const {
  const char order = item_size == 1 ? '|' : '<';
  return absl::StrCat(std::string(1, order), std::string(1, kind), item_size);
}

int64_t NpyArray::element_count() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string NpyArray::ShapeString() const {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

absl::StatusOr<NpyArray> ParseNpy(absl::string_view contents) {
  if (contents.size() < 10 || contents.substr(0, kMagic.size()) != kMagic) {
    return absl::InvalidArgumentError(
        "not a .npy file (it does not start with \"\\x93NUMPY\")");
  }
  const uint8_t major = static_cast<uint8_t>(contents[6]);
  const uint8_t minor = static_cast<uint8_t>(contents[7]);
  size_t header_len;
  size_t header_start;
  auto byte = [&](size_t i) {
    return static_cast<size_t>(static_cast<uint8_t>(contents[i]));
  };
  if (major == 1 && minor == 0) {
    header_len = byte(8) | byte(9) << 8;
    header_start = 10;
  } else if ((major == 2 || major == 3) && minor == 0) {
    if (contents.size() < 12) return HeaderError("file is truncated");
    header_len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    header_start = 12;
  } else {
    return absl::InvalidArgumentError(absl::StrFormat(
        ".npy format version %d.%d is not supported (1.0, 2.0 and 3.0 are)",
        major, minor));
  }
  if (contents.size() - header_start < header_len) {
    return HeaderError("file ends inside the header");
  }
  absl::StatusOr<std::map<std::string, HeaderValue>> dict =
      HeaderParser(contents.substr(header_start, header_len)).Parse();
  if (!dict.ok()) return dict.status();
  for (const auto& [key, value] : *dict) {
    if (key != "descr" && key != "fortran_order" && key != "shape") {
      return HeaderError(absl::StrCat("unexpected key '", key, "'"));
    }
  }
  auto descr = dict->find("descr");
  auto fortran = dict->find("fortran_order");
  auto shape = dict->find("shape");
  if (descr == dict->end() || fortran == dict->end() || shape == dict->end()) {
    return HeaderError(
        "it needs the keys 'descr', 'fortran_order' and 'shape'");
  }
  if (descr->second.kind == HeaderValue::kList) {
    return absl::InvalidArgumentError(
        "structured .npy dtypes are not supported; save a plain array");
  }
  if (descr->second.kind != HeaderValue::kString) {
    return HeaderError("'descr' must be a string");
  }
  if (fortran->second.kind != HeaderValue::kBool) {
    return HeaderError("'fortran_order' must be True or False");
  }
  if (fortran->second.flag) {
    return absl::InvalidArgumentError(
        "Fortran-ordered .npy arrays are not supported; save it in C order, "
        "e.g. np.save(path, np.ascontiguousarray(a))");
  }
  if (shape->second.kind != HeaderValue::kTuple) {
    return HeaderError("'shape' must be a tuple");
  }
  absl::StatusOr<NpyDtype> dtype = DtypeFromDescr(descr->second.text);
  if (!dtype.ok()) return dtype.status();

  NpyArray array;
  array.dtype = *dtype;
  array.shape = shape->second.ints;
  absl::string_view data = contents.substr(header_start + header_len);
  // Overflow-safe: a huge shape cannot match any real file.
  long double expected = array.dtype.item_size;
  for (int64_t d : array.shape) expected *= d;
  if (expected != static_cast<long double>(data.size())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        ".npy data is %d bytes but a %s array of shape %s needs %.0Lf",
        data.size(), array.dtype.Name(), array.ShapeString(), expected));
  }
  array.data = std::string(data);
  return array;
}

std::string SerializeNpy(const NpyArray& array) {
  std::string dict = absl::StrCat(
      "{'descr': '", array.dtype.Descr(),
      "', 'fortran_order': False, 'shape': ", array.ShapeString(), ", }");
  // Magic (6) + version (2) + length (2 or 4) + dict + padding + '\n' is a
  // multiple of 64.
  auto padded = [&](size_t prefix) {
    size_t total = prefix + dict.size() + 1;
    return dict.size() + 1 + (64 - total % 64) % 64;
  };
  size_t header_len = padded(10);
  const bool v2 = header_len > 0xffff;
  if (v2) header_len = padded(12);
  std::string out(kMagic);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  const int len_bytes = v2 ? 4 : 2;
  for (int i = 0; i < len_bytes; ++i) {
    out.push_back(static_cast<char>((header_len >> (8 * i)) & 0xff));
  }
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  out += array.data;
  return out;
}

absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  absl::StatusOr<NpyArray> array = ParseNpy(buffer.str());
  if (!array.ok()) {
    return absl::Status(array.status().code(),
                        absl::StrCat(path, ": ", array.status().message()));
  }
  return array;
}

absl::Status WriteNpyFile(const std::string& path, const NpyArray& array) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  }
  const std::string bytes = SerializeNpy(array);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    return absl::DataLossError(absl::StrCat(path, ": write failed"));
  }
  return absl::OkStatus();
}

}  // namespace tpu
