// The pieces of `lpbench report --out`: chart scripts, inline SVG, the document's two forms.
#include <gtest/gtest.h>

#include <cmath>

#include "reports/chart.h"
#include "reports/document.h"
#include "reports/markup.h"
#include "reports/text_table.h"

namespace lpbench::reports {
namespace {

Chart two_point_chart() {
  Chart chart;
  chart.title = "Loss \"per\" step";
  chart.x_label = "step";
  chart.y_label = "loss";
  chart.series.push_back(
      {"bf16", ChartSeries::Style::lines, -1, {{0, 6.2, 0, 0, {}}, {1, NAN, 0, 0, {}}}});
  return chart;
}

TEST(Chart, ScriptHoldsTheDataInlineAndEscapesText) {
  const std::string script = gnuplot_script(two_point_chart());
  EXPECT_NE(script.find("set terminal svg"), std::string::npos);
  EXPECT_NE(script.find("noenhanced"), std::string::npos);  // "_" in names stays literal
  EXPECT_NE(script.find("set title \"Loss \\\"per\\\" step\""), std::string::npos) << script;
  EXPECT_NE(script.find("0 6.2 0 0\n"), std::string::npos) << script;
  EXPECT_NE(script.find("1 NaN 0 0\n"), std::string::npos) << script;  // left out of the drawing
  EXPECT_NE(script.find("plot $d0 using 1:2 with lines"), std::string::npos) << script;
}

TEST(Chart, SeriesWithoutFinitePointsAreNotDrawn) {
  Chart chart = two_point_chart();
  EXPECT_TRUE(has_data(chart));
  chart.series[0].points = {{0, NAN, 0, 0, {}}};
  EXPECT_FALSE(has_data(chart));
  EXPECT_EQ(gnuplot_script(chart).find("plot "), std::string::npos);
}

TEST(Chart, InlineSvgGetsItsOwnIdsAndTitle) {
  const std::string svg =
      "<?xml version=\"1.0\"?>\n<svg viewBox=\"0 0 10 10\">\n<title>Gnuplot</title>\n"
      "<defs><path id='gpPt0' d='M0,0'/></defs><g id=\"gnuplot_canvas\">"
      "<use xlink:href='#gpPt0'/><rect filter=\"url(#textbox)\"/></g></svg>\n";
  const std::string out = inline_svg(svg, "c2-", "Loss <per> step");
  EXPECT_EQ(out.rfind("<svg", 0), 0U) << out;  // no XML declaration inside HTML
  EXPECT_NE(out.find("id='c2-gpPt0'"), std::string::npos) << out;
  EXPECT_NE(out.find("href='#c2-gpPt0'"), std::string::npos) << out;
  EXPECT_NE(out.find("id=\"c2-gnuplot_canvas\""), std::string::npos) << out;
  EXPECT_NE(out.find("url(#c2-textbox)"), std::string::npos) << out;
  EXPECT_NE(out.find("<title>Loss &lt;per> step</title>"), std::string::npos) << out;
}

TEST(Document, MarkdownLinksFiguresAndHtmlInlinesThem) {
  Document doc("lpbench report");
  doc.heading(2, "Sweep 1");
  doc.paragraph("From `x.db` & more");
  TextTable table({{"recipe"}, {"ms", TextTable::Align::right}});
  table.add_row({"<bf16>", "**1.5**"});
  doc.table(table);
  Figure figure;
  figure.file = "sweep-1-loss.svg";
  figure.caption = "Loss per step.";
  figure.chart = two_point_chart();
  doc.figure(figure);
  ASSERT_EQ(doc.figures().size(), 1U);
  doc.figures()[0]->svg = "<svg id='a'><path d='M0,0 L1,1'/></svg>";

  const std::string md = doc.markdown();
  EXPECT_NE(md.find("# lpbench report\n"), std::string::npos) << md;
  EXPECT_NE(md.find("![Loss \"per\" step](sweep-1-loss.svg)"), std::string::npos) << md;
  EXPECT_NE(md.find("| <bf16> | **1.5** |"), std::string::npos) << md;

  const std::string html = doc.html();
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(html.find("<code>x.db</code> &amp; more"), std::string::npos) << html;
  EXPECT_NE(html.find("<td>&lt;bf16&gt;</td><td class=\"num\"><strong>1.5</strong></td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("<svg id='c1-a'><path"), std::string::npos) << html;
  EXPECT_NE(html.find("id=\"lpbench-load-check\""), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // nothing to fetch
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

TEST(Markup, EscapesForXml) {
  EXPECT_EQ(xml_escape("a<b>&\"c'\x01"), "a&lt;b&gt;&amp;&quot;c&#39; ");
  EXPECT_EQ(inline_html("run `a<b` **ok**"), "run <code>a&lt;b</code> <strong>ok</strong>");
}

}  // namespace
}  // namespace lpbench::reports
