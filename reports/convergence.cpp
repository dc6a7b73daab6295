#include "reports/convergence.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/errors.h"
#include "reports/run_summary.h"
#include "reports/text_table.h"

namespace lpbench::reports {

namespace {

constexpr const char* kBaseline = "bf16";

std::string loss_text(const std::optional<double>& v) {
  return v ? fmt::format("{:.4f}", *v) : "—";
}

std::string too_short_why(const std::string& recipe, int64_t steps, const ParityRule& rule) {
  return fmt::format("{} ran {} step{}; a verdict needs {} or more (--min-steps)", recipe, steps,
                     steps == 1 ? "" : "s", rule.min_steps);
}

}  // namespace

std::string ParityRule::describe() const {
  return fmt::format(
      "parity: the mean final validation loss over a recipe's seeds is at most the highest BF16 "
      "seed's plus {:.1f} %; a recipe whose run diverged or failed is not at parity; runs of "
      "fewer than {} steps are too short to judge",
      100.0 * tolerance, min_steps);
}

std::string_view to_string(Parity parity) {
  switch (parity) {
    case Parity::baseline:
      return "baseline";
    case Parity::parity:
      return "parity";
    case Parity::outside:
      return "outside";
    case Parity::diverged:
      return "diverged";
    case Parity::incomplete:
      return "incomplete";
    case Parity::too_short:
      return "too short";
    case Parity::no_data:
      return "no data";
  }
  return "?";
}

std::vector<RecipeVerdict> judge(const std::vector<SeedResult>& results, const ParityRule& rule) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const SeedResult*>> by_recipe;
  for (const SeedResult& r : results) {
    if (!by_recipe.count(r.recipe)) order.push_back(r.recipe);
    by_recipe[r.recipe].push_back(&r);
  }

  std::vector<RecipeVerdict> verdicts;
  for (const std::string& recipe : order) {
    RecipeVerdict v;
    v.recipe = recipe;
    std::vector<double> losses;
    bool broke = false;
    std::string stopped;
    for (const SeedResult* r : by_recipe[recipe]) {
      if (r->status == store::RunStatus::interrupted && stopped.empty()) {
        stopped = fmt::format("seed {} stopped at step {} of {}", r->seed, r->steps_done,
                              r->steps_planned);
      }
      v.fewest_steps = v.seeds == 0 ? r->steps_done : std::min(v.fewest_steps, r->steps_done);
      ++v.seeds;
      v.instability_events += r->instability_events;
      broke = broke || r->status == store::RunStatus::diverged ||
              r->status == store::RunStatus::failed || r->status == store::RunStatus::oom ||
              (r->final_loss && !std::isfinite(*r->final_loss));
      if (r->final_loss && std::isfinite(*r->final_loss)) losses.push_back(*r->final_loss);
    }
    if (!losses.empty()) {
      double sum = 0.0;
      for (double l : losses)
        sum += l;
      v.mean = sum / static_cast<double>(losses.size());
      v.min = *std::min_element(losses.begin(), losses.end());
      v.max = *std::max_element(losses.begin(), losses.end());
    }
    if (broke) {
      v.verdict = Parity::diverged;
      v.why = "a run diverged, failed or ran out of memory";
    } else if (!stopped.empty()) {
      v.verdict = Parity::incomplete;
      v.why = stopped + "; run it again to judge it";
    } else if (!v.mean) {
      v.verdict = Parity::no_data;
      v.why = "no finite final loss was recorded";
    } else if (v.fewest_steps < rule.min_steps) {
      v.verdict = Parity::too_short;
      v.why = too_short_why(v.recipe, v.fewest_steps, rule);
    }
    verdicts.push_back(v);
  }

  const auto base = std::find_if(verdicts.begin(), verdicts.end(),
                                 [](const RecipeVerdict& v) { return v.recipe == kBaseline; });
  for (RecipeVerdict& v : verdicts) {
    if (v.recipe == kBaseline) {
      if (v.verdict == Parity::no_data && v.mean) v.verdict = Parity::baseline;
      continue;
    }
    if (v.verdict == Parity::diverged || v.verdict == Parity::incomplete || !v.mean) continue;
    if (base == verdicts.end() || !base->max) {
      v.verdict = Parity::no_data;
      v.why = "no BF16 run to compare with";
      continue;
    }
    v.gap_pct = 100.0 * (*v.mean - *base->mean) / *base->mean;
    if (v.verdict == Parity::too_short) continue;
    if (base->verdict == Parity::too_short) {
      v.verdict = Parity::too_short;
      v.why = too_short_why(kBaseline, base->fewest_steps, rule);
      continue;
    }
    const double limit = *base->max * (1.0 + rule.tolerance);
    v.verdict = *v.mean <= limit ? Parity::parity : Parity::outside;
    v.why = fmt::format("{:.4f} {} {:.4f} (BF16's highest seed {:.4f} + {:.1f} %)", *v.mean,
                        v.verdict == Parity::parity ? "<=" : ">", limit, *base->max,
                        100.0 * rule.tolerance);
  }
  return verdicts;
}

std::vector<SeedResult> collect_seed_results(const store::Store& store,
                                             const std::vector<int64_t>& sweep_ids) {
  std::vector<SeedResult> results;
  for (int64_t sweep_id : sweep_ids) {
    for (const store::RunRecord& run : store.runs(sweep_id)) {
      if (run.level != "model") continue;
      SeedResult r;
      r.recipe = run.recipe;
      r.status = run.status;
      r.workload = run.workload;
      const auto config = nlohmann::json::parse(run.config_json, nullptr, false);
      if (!config.is_discarded() && config.contains("training")) {
        r.seed = config["training"].value("seed", uint64_t{0});
        r.steps_planned = config["training"].value("steps", int64_t{0});
      }
      const std::vector<store::StepRecord> steps = store.steps(run.id);
      r.steps_done = static_cast<int64_t>(steps.size());
      const std::vector<store::EvalRecord> evals = store.evals(run.id);
      if (!evals.empty()) {
        r.final_loss = evals.back().val_loss;
      } else {
        r.validation = false;
        r.final_loss = run_final_loss(run, steps);
      }
      for (const store::EventRecord& e : store.events(run.id)) {
        if (e.kind == "loss_spike" || e.kind == "grad_norm_growth" || e.kind == "non_finite") {
          ++r.instability_events;
        }
      }
      results.push_back(r);
    }
  }
  for (const SeedResult& r : results) {
    if (r.workload != results.front().workload) {
      throw InputError(fmt::format(
          "the sweeps hold more than one workload ({} and {}): judge one model at a time",
          results.front().workload, r.workload));
    }
  }
  // A run stopped early and then run again to the end: the finished run speaks for that seed.
  const auto finished = [&](const SeedResult& stopped) {
    return std::any_of(results.begin(), results.end(), [&](const SeedResult& r) {
      return r.recipe == stopped.recipe && r.seed == stopped.seed &&
             r.status != store::RunStatus::interrupted;
    });
  };
  results.erase(std::remove_if(results.begin(), results.end(),
                               [&](const SeedResult& r) {
                                 return r.status == store::RunStatus::interrupted && finished(r);
                               }),
                results.end());
  return results;
}

std::string render_verdicts(const std::vector<RecipeVerdict>& verdicts, const ParityRule& rule) {
  TextTable table({{"recipe"},
                   {"seeds", TextTable::Align::right},
                   {"final val loss mean", TextTable::Align::right},
                   {"min–max", TextTable::Align::right},
                   {"gap vs bf16", TextTable::Align::right},
                   {"instability events", TextTable::Align::right},
                   {"verdict"},
                   {"why"}});
  int64_t bf16_seeds = 0;
  for (const RecipeVerdict& v : verdicts) {
    if (v.recipe == kBaseline) bf16_seeds = v.seeds;
    table.add_row({v.recipe, std::to_string(v.seeds), loss_text(v.mean),
                   v.min ? fmt::format("{}–{}", loss_text(v.min), loss_text(v.max)) : "—",
                   v.gap_pct ? fmt::format("{:+.2f} %", *v.gap_pct) : "—",
                   std::to_string(v.instability_events), std::string(to_string(v.verdict)), v.why});
  }
  std::string text = table.markdown();
  text += "\n- " + rule.describe() + ".\n";
  if (bf16_seeds < 2) {
    text += fmt::format(
        "- BF16 ran {} seed{}: its band is a point, so seed-to-seed spread is not accounted for; "
        "run with --seeds 3 or more for a band.\n",
        bf16_seeds, bf16_seeds == 1 ? "" : "s");
  }
  return text;
}

bool all_at_parity(const std::vector<RecipeVerdict>& verdicts) {
  return std::all_of(verdicts.begin(), verdicts.end(), [](const RecipeVerdict& v) {
    return v.verdict == Parity::baseline || v.verdict == Parity::parity;
  });
}

}  // namespace lpbench::reports
