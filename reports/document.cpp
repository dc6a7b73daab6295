#include "reports/document.h"

#include <fmt/format.h>

#include "reports/markup.h"

namespace lpbench::reports {

namespace {

constexpr std::string_view kStyle = R"css(
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem;
       color: #1b1b1b; line-height: 1.45; }
h1, h2, h3 { line-height: 1.2; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #d0d0d0; padding: 0.25rem 0.5rem; text-align: left; }
th { background: #f3f3f3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: ui-monospace, monospace; font-size: 0.88rem; }
pre { background: #f6f6f6; padding: 0.5rem; overflow-x: auto; white-space: pre-wrap; }
figure { margin: 1.5rem 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.9rem; color: #444; }
)css";

// Runs first in <head>: every error from then on (a script failing, a resource refused by the
// content security policy) is collected; once the page has loaded, the count of charts, of those
// drawn (an <svg> with a visible box holding a drawn <path>) and of errors go into the footer.
constexpr std::string_view kLoadCheck = R"js(
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push(e.message || ('could not load ' + (e.target && (e.target.src || e.target.href))));
  }, true);
  document.addEventListener('securitypolicyviolation', function (e) {
    errors.push('refused to load ' + e.blockedURI);
  });
  window.addEventListener('load', function () {
    var charts = document.querySelectorAll('figure svg');
    var drawn = 0;
    charts.forEach(function (svg) {
      var box = svg.getBoundingClientRect();
      var painted = Array.prototype.some.call(svg.querySelectorAll('path'), function (p) {
        var b = p.getBBox();
        return b.width > 0 || b.height > 0;
      });
      if (box.width > 0 && box.height > 0 && painted) drawn++;
    });
    var out = document.getElementById('lpbench-load-check');
    out.setAttribute('data-charts', charts.length);
    out.setAttribute('data-drawn', drawn);
    out.setAttribute('data-errors', errors.length);
    out.textContent = errors.join('; ');
  });
})();
)js";

}  // namespace

void Document::heading(int level, std::string text) {
  blocks_.push_back({Block::Kind::heading, level, std::move(text), {}, {}, {}});
}

void Document::paragraph(std::string text) {
  blocks_.push_back({Block::Kind::paragraph, 0, std::move(text), {}, {}, {}});
}

void Document::code(std::string text) {
  blocks_.push_back({Block::Kind::code, 0, std::move(text), {}, {}, {}});
}

void Document::list(std::vector<std::string> items) {
  if (items.empty()) return;
  blocks_.push_back({Block::Kind::list, 0, {}, std::move(items), {}, {}});
}

void Document::table(TextTable table) {
  blocks_.push_back({Block::Kind::table, 0, {}, {}, {std::move(table)}, {}});
}

void Document::figure(Figure figure) {
  blocks_.push_back({Block::Kind::figure, 0, {}, {}, {}, {std::move(figure)}});
}

std::vector<Figure*> Document::figures() {
  std::vector<Figure*> out;
  for (Block& block : blocks_) {
    if (block.kind == Block::Kind::figure) out.push_back(&block.figure.front());
  }
  return out;
}

std::string Document::markdown() const {
  std::string out = fmt::format("# {}\n", title_);
  for (const Block& b : blocks_) {
    out += "\n";
    switch (b.kind) {
      case Block::Kind::heading:
        out += fmt::format("{} {}\n", std::string(static_cast<size_t>(b.level), '#'), b.text);
        break;
      case Block::Kind::paragraph:
        out += b.text + "\n";
        break;
      case Block::Kind::code:
        out += "```\n" + b.text + "\n```\n";
        break;
      case Block::Kind::list:
        for (const std::string& item : b.items)
          out += "- " + item + "\n";
        break;
      case Block::Kind::table:
        out += b.table.front().markdown();
        break;
      case Block::Kind::figure: {
        const Figure& f = b.figure.front();
        out += fmt::format("![{}]({})\n\n{}\n", f.chart.title, f.file, f.caption);
        break;
      }
    }
  }
  return out;
}

std::string Document::html() const {
  std::string body;
  int chart = 0;
  for (const Block& b : blocks_) {
    switch (b.kind) {
      case Block::Kind::heading:
        body += fmt::format("<h{0}>{1}</h{0}>\n", b.level, inline_html(b.text));
        break;
      case Block::Kind::paragraph:
        body += "<p>" + inline_html(b.text) + "</p>\n";
        break;
      case Block::Kind::code:
        body += "<pre><code>" + xml_escape(b.text) + "</code></pre>\n";
        break;
      case Block::Kind::list:
        body += "<ul>\n";
        for (const std::string& item : b.items)
          body += "<li>" + inline_html(item) + "</li>\n";
        body += "</ul>\n";
        break;
      case Block::Kind::table:
        body += b.table.front().html();
        break;
      case Block::Kind::figure: {
        const Figure& f = b.figure.front();
        body += fmt::format("<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
                            inline_svg(f.svg, fmt::format("c{}-", ++chart), f.chart.title),
                            inline_html(f.caption));
        break;
      }
    }
  }
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>{0}</title>\n<script>{1}</script>\n<style>{2}</style>\n</head>\n<body>\n"
      "<h1>{0}</h1>\n{3}<footer id=\"lpbench-load-check\" hidden></footer>\n</body>\n</html>\n",
      xml_escape(title_), kLoadCheck, kStyle, body);
}

}  // namespace lpbench::reports
