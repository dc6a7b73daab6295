#include "reports/compare_render.h"

#include <fmt/format.h>

#include "reports/markup.h"
#include "reports/run_summary.h"
#include "reports/text_table.h"

namespace lpbench::reports {

namespace {

std::string headline(const Comparison& c) {
  switch (c.exit_code()) {
    case 0:
      return "**NO REGRESSION**: every metric compared is the same or better, beyond doubt.";
    case 1:
      return fmt::format("**REGRESSION**: {} metric{} got worse beyond the measured spread.",
                         c.regressions(), c.regressions() == 1 ? "" : "s");
    default:
      if (c.groups.empty()) return "**UNSURE**: nothing was measured on both sides.";
      return fmt::format(
          "**UNSURE**: no regression found, but {} metric{} cannot be decided from this data.",
          c.unsure(), c.unsure() == 1 ? "" : "s");
  }
}

std::string run_ids(const std::vector<int64_t>& ids) {
  std::string text;
  for (int64_t id : ids)
    text += (text.empty() ? "" : ",") + std::to_string(id);
  return text;
}

// Table cells must not break the row.
std::string cell(std::string text) {
  for (char& ch : text) {
    if (ch == '|' || ch == '\n') ch = ch == '|' ? '/' : ' ';
  }
  return text;
}

}  // namespace

std::string render_compare_markdown(const Comparison& c) {
  using Align = TextTable::Align;
  TextTable table({{"workload"},
                   {"recipe"},
                   {"metric"},
                   {"baseline", Align::right},
                   {"candidate", Align::right},
                   {"change", Align::right},
                   {"verdict"}});
  for (const GroupResult& g : c.groups) {
    for (const MetricResult& m : g.metrics) {
      const std::string word(verdict_word(m.metric, m.verdict));
      table.add_row({cell(g.workload), cell(g.recipe), std::string(to_string(m.metric)),
                     cell(m.baseline), cell(m.candidate), cell(m.change),
                     m.verdict == Verdict::regressed ? "**" + word + "**" : word});
    }
  }
  std::string out = fmt::format("## lpbench compare: `{}` → `{}`\n\n{}\n\n", c.baseline_spec,
                                c.candidate_spec, headline(c));
  for (const std::string& warning : c.warnings) {
    out += fmt::format(
        "**WARNING** (--allow-mismatch): {}; the verdicts above compare unlike "
        "runs.\n\n",
        warning);
  }
  if (table.rows() > 0) out += table.markdown() + "\n";

  bool any_reason = false;
  for (const GroupResult& g : c.groups) {
    for (const MetricResult& m : g.metrics) {
      if (m.verdict != Verdict::unsure && m.verdict != Verdict::regressed) continue;
      if (!any_reason) out += "Why:\n\n";
      any_reason = true;
      out += fmt::format("- {} · {} · {}: {} — {}\n", g.workload, g.recipe, to_string(m.metric),
                         verdict_word(m.metric, m.verdict), m.reason);
    }
  }
  if (any_reason) out += "\n";
  bool any_culprit = false;
  for (const GroupResult& g : c.groups) {
    for (const MetricResult& m : g.metrics) {
      if (m.culprit.empty()) continue;
      if (!any_culprit) out += "Where it broke:\n\n";
      any_culprit = true;
      out +=
          fmt::format("- {} · {} · {}: {}\n", g.workload, g.recipe, to_string(m.metric), m.culprit);
    }
  }
  if (any_culprit) out += "\n";
  if (!c.groups.empty()) out += "Runs compared:\n\n";
  for (const GroupResult& g : c.groups) {
    const std::string_view what = g.kind == GroupResult::Kind::runs ? "run" : "kernel result";
    out += fmt::format("- {} · {}: baseline {} {}, candidate {} {}\n", g.workload, g.recipe, what,
                       run_ids(g.baseline_runs), what, run_ids(g.candidate_runs));
  }
  if (!c.notes.empty()) out += c.groups.empty() ? "Notes:\n\n" : "\nNotes:\n\n";
  for (const std::string& note : c.notes)
    out += "- " + note + "\n";
  const ComparePolicy& p = c.policy;
  out += fmt::format(
      "\nHow: step times and tokens/s of the measured steps (warm-up left out) are compared with "
      "a Mann–Whitney U test; the change is the Hodges–Lehmann shift relative to the baseline's "
      "median, with its {:.0f} % confidence interval, and the speedup (the baseline's median "
      "step over the candidate's, with the range the p10–p90 spreads allow, as every lpbench "
      "report computes it). FASTER/SLOWER when the interval excludes 0, the shift is at least "
      "{:.0f} % and the speedup's range excludes 1; SAME when the interval lies within ±{:.0f} "
      "%; UNSURE otherwise, with fewer than {} measured steps a side, when a run was measured "
      "under contention (other processes busy on its machine or GPU), or, when the sides come "
      "from different sweeps, with fewer than three baseline runs or a candidate median inside "
      "the range of the baseline's run medians (runs of other days vary more than steps of one "
      "run); across sweeps, a candidate median inside the {:.0f} % prediction interval of the "
      "baseline's run medians (Student t: where one more unchanged night falls) is SAME. Runs of "
      "another workload, size, depth or GPU model are not compared (exit 2) "
      "unless --allow-mismatch is given. Peak memory: "
      "±{:.0f} % of the baseline's peaks. Final loss (mean of the last {:.0f} % of steps): a "
      "parity band of ±{:.0f} % (wider where the baseline's runs spread more, and from three "
      "runs on as wide as their {:.1f} % prediction interval: training on a GPU is not "
      "bit-reproducible, and a night judges many losses), "
      "for runs trained alike. Kernel suite cases are judged like step times, on their timed "
      "samples, with a threshold of {:.0f} % (a call moves more from night to night than a "
      "step). Across "
      "nights, each recipe's speedup over the BF16 run of its own sweep (and each kernel's over "
      "its BF16 twin) is tracked too: SLOWER when it falls below every baseline night's by at "
      "least {:.0f} % and below their prediction interval, with its own range below their median "
      "(three nights needed); and its loss gap to that BF16 run: WORSE when it grows beyond "
      "every baseline night's by more than {:.0f} points and, from three nights on, beyond their "
      "{:.1f} % prediction interval. A regression across nights names the first bad night and the "
      "last "
      "good one, with the `git log` between their commits.\n",
      100.0 * (1.0 - p.alpha), 100.0 * p.min_effect, 100.0 * p.min_effect, p.min_samples,
      100.0 * (1.0 - p.alpha), 100.0 * p.memory_tolerance, 100.0 * kFinalLossShare,
      100.0 * p.loss_band, 100.0 * (1.0 - p.loss_alpha), 100.0 * p.kernel_min_effect,
      100.0 * p.min_effect, 100.0 * p.loss_band, 100.0 * (1.0 - p.loss_alpha));
  return out;
}

std::string render_compare_junit(const Comparison& c) {
  int tests = 0;
  for (const GroupResult& g : c.groups)
    tests += static_cast<int>(g.metrics.size());
  std::string cases;
  for (const GroupResult& g : c.groups) {
    for (const MetricResult& m : g.metrics) {
      std::string summary =
          fmt::format("{}: {}; baseline {}; candidate {}; {}", verdict_word(m.metric, m.verdict),
                      m.change, m.baseline, m.candidate, m.reason);
      if (!m.culprit.empty()) summary += "; " + m.culprit;
      for (const std::string& warning : c.warnings)
        summary = fmt::format("WARNING (--allow-mismatch): {}. {}", warning, summary);
      cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\">",
                           xml_escape(g.workload + " · " + g.recipe),
                           xml_escape(std::string(to_string(m.metric))));
      if (m.verdict == Verdict::regressed) {
        cases += fmt::format("<failure message=\"{0}\" type=\"regression\">{0}</failure>",
                             xml_escape(summary));
      } else if (m.verdict == Verdict::unsure) {
        cases += fmt::format("<skipped message=\"{}\"/>", xml_escape(summary));
      } else {
        cases += fmt::format("<system-out>{}</system-out>", xml_escape(summary));
      }
      cases += "</testcase>\n";
    }
  }
  if (tests == 0) {
    // A suite with no case reads as green in some CI systems; not enough data must not.
    std::string why;
    for (const std::string& note : c.notes)
      why += (why.empty() ? "" : "; ") + note;
    cases += fmt::format(
        "    <testcase classname=\"lpbench compare\" name=\"data\"><skipped message=\"{}\"/>"
        "</testcase>\n",
        xml_escape(why.empty() ? "nothing was measured on both sides" : why));
    tests = 1;
  }
  const std::string name = xml_escape(c.baseline_spec + " → " + c.candidate_spec);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"lpbench compare\" tests=\"{1}\" failures=\"{2}\" skipped=\"{3}\">\n"
      "  <testsuite name=\"{0}\" tests=\"{1}\" failures=\"{2}\" skipped=\"{3}\" errors=\"0\">\n"
      "{4}"
      "  </testsuite>\n"
      "</testsuites>\n",
      name, tests, c.regressions(), c.groups.empty() ? 1 : c.unsure(), cases);
}

}  // namespace lpbench::reports
