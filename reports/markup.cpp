#include "reports/markup.h"

namespace lpbench::reports {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // Control characters other than tab and newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string inline_html(std::string_view text) {
  std::string out;
  bool code = false;
  bool bold = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else if (!code && text.substr(i, 2) == "**") {
      out += bold ? "</strong>" : "<strong>";
      bold = !bold;
      ++i;
    } else {
      out += xml_escape(text.substr(i, 1));
    }
  }
  if (code) out += "</code>";
  if (bold) out += "</strong>";
  return out;
}

}  // namespace lpbench::reports
