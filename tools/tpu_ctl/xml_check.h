#ifndef SOFTWARE_TPU_TOOLS_TPU_CTL_XML_CHECK_H_
#define SOFTWARE_TPU_TOOLS_TPU_CTL_XML_CHECK_H_

// A small XML well-formedness check for tests of generated SVG: tags nest
// and close, attributes are quoted, text and attributes hold no raw '<' or
// a '&' that does not start an entity. Not a validating parser.

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tpu::tools {

inline absl::Status CheckWellFormedXml(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  bool root_seen = false;
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("not well-formed XML at byte ", i, ": ", what));
  };
  auto check_text = [&](size_t from, size_t to) -> absl::Status {
    for (size_t k = from; k < to; ++k) {
      if (xml[k] == '&') {
        const size_t semi = xml.find(';', k);
        if (semi == std::string::npos || semi - k > 8) {
          return bad("'&' that starts no entity");
        }
      }
    }
    return absl::OkStatus();
  };
  while (i < xml.size()) {
    const size_t lt = xml.find('<', i);
    if (lt == std::string::npos) {
      absl::Status text = check_text(i, xml.size());
      if (!text.ok()) return text;
      break;
    }
    absl::Status text = check_text(i, lt);
    if (!text.ok()) return text;
    if (!open.empty() || true) {
      // Text outside the root may only be whitespace.
      if (open.empty()) {
        for (size_t k = i; k < lt; ++k) {
          if (!isspace(static_cast<unsigned char>(xml[k]))) {
            return bad("text outside the root element");
          }
        }
      }
    }
    i = lt;
    if (xml.compare(i, 5, "<?xml") == 0) {
      const size_t close = xml.find("?>", i);
      if (close == std::string::npos) return bad("unclosed <?xml");
      i = close + 2;
      continue;
    }
    // Find the tag's end, skipping quoted attribute values.
    size_t k = i + 1;
    char quote = 0;
    for (; k < xml.size(); ++k) {
      const char c = xml[k];
      if (quote != 0) {
        if (c == quote) quote = 0;
        if (c == '<') return bad("'<' inside an attribute");
      } else if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '>') {
        break;
      } else if (c == '<') {
        return bad("'<' inside a tag");
      }
    }
    if (k >= xml.size()) return bad("unclosed tag");
    std::string tag = xml.substr(i + 1, k - i - 1);
    i = k + 1;
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) {
        return bad(absl::StrCat("</", name, "> closes ",
                                open.empty() ? "nothing" : open.back()));
      }
      open.pop_back();
      continue;
    }
    const bool self_closing = !tag.empty() && tag.back() == '/';
    const size_t name_end = tag.find_first_of(" \t\n/");
    const std::string name = tag.substr(0, name_end);
    if (name.empty()) return bad("a tag without a name");
    if (open.empty()) {
      if (root_seen) return bad("a second root element");
      root_seen = true;
    }
    if (!self_closing) open.push_back(name);
  }
  if (!open.empty()) return bad(absl::StrCat("<", open.back(), "> not closed"));
  if (!root_seen) return bad("no root element");
  return absl::OkStatus();
}

}  // namespace tpu::tools

#endif  // SOFTWARE_TPU_TOOLS_TPU_CTL_XML_CHECK_H_
