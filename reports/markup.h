#pragma once

#include <string>
#include <string_view>

namespace lpbench::reports {

// Text made safe inside XML and HTML: element content and quoted attribute values alike.
std::string xml_escape(std::string_view text);

// A line of the little Markdown lpbench writes, as HTML: escaped, with `code` and **bold**.
std::string inline_html(std::string_view text);

}  // namespace lpbench::reports
