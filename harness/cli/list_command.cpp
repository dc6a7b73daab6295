#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "base/store/store.h"
#include "harness/cli/commands.h"
#include "kernels/recipe.h"
#include "reports/run_list.h"
#include "reports/text_table.h"
#include "workloads/levels/workload.h"
#include "workloads/models/model_config.h"

namespace lpbench::cli {

namespace {

struct ListOptions {
  std::string what;
  std::string db = "lpbench.db";
};

std::string recipe_table() {
  reports::TextTable table({{"recipe"}, {"GEMMs"}, {"kept in BF16"}, {"what it is"}});
  for (const kernels::Recipe& recipe : kernels::named_recipes()) {
    std::string kept;
    for (const kernels::KeepRule& rule : recipe.keep_bf16)
      kept += (kept.empty() ? "" : ", ") + rule.pattern;
    table.add_row(
        {recipe.name, kernels::describe(recipe.gemms), kept.empty() ? "—" : kept, recipe.summary});
  }
  return table.markdown();
}

std::string model_table() {
  using Align = reports::TextTable::Align;
  reports::TextTable table({{"model"},
                            {"family"},
                            {"layers", Align::right},
                            {"hidden", Align::right},
                            {"ffn", Align::right},
                            {"heads (kv)", Align::right},
                            {"head dim", Align::right},
                            {"experts", Align::right},
                            {"vocab", Align::right},
                            {"parameters", Align::right},
                            {"active", Align::right},
                            {"GFLOP/token", Align::right},
                            {"seq", Align::right}});
  for (const std::string& name : workloads::builtin_model_names()) {
    const workloads::ModelConfig& m = workloads::builtin_model(name);
    const std::string layers = m.num_layers == m.published_layers
                                   ? std::to_string(m.num_layers)
                                   : fmt::format("{} of {}", m.num_layers, m.published_layers);
    table.add_row({m.name, m.family, layers, std::to_string(m.hidden_size),
                   std::to_string(m.intermediate_size),
                   fmt::format("{} ({})", m.num_heads, m.num_kv_heads), std::to_string(m.head_dim),
                   m.is_moe() ? fmt::format("{} top-{}", m.num_experts, m.experts_per_token) : "—",
                   std::to_string(m.vocab_size),
                   fmt::format("{:.3f} B", static_cast<double>(m.parameter_count()) / 1e9),
                   fmt::format("{:.3f} B", static_cast<double>(m.parameter_count(true)) / 1e9),
                   fmt::format("{:.2f}", m.flops_per_token(m.default_seq_len) / 1e9),
                   std::to_string(m.default_seq_len)});
  }
  return table.markdown() +
         "\nParameters at the depth built; GFLOP/token (6·N_active + 12·L·H·Q·T, attention "
         "counted causal-free) at the sequence length in the last column.\n";
}

int execute(const ListOptions& options) {
  if (options.what == "runs") {
    const store::Store store = store::Store::open(options.db, store::Store::Mode::read);
    fmt::print("{}", reports::render_run_list(store));
  } else if (options.what == "recipes") {
    fmt::print("{}", recipe_table());
  } else if (options.what == "models") {
    fmt::print("{}", model_table());
  } else {
    fmt::print("levels: {}\n", fmt::join(workloads::level_names(), ", "));
  }
  return 0;
}

}  // namespace

void add_list_command(CLI::App& app, Action& action) {
  auto options = std::make_shared<ListOptions>();
  CLI::App* list =
      app.add_subcommand("list", "List runs in the database, or recipes, models, levels");
  list->add_option("what", options->what, "runs, recipes, models or levels")
      ->required()
      ->check(CLI::IsMember({"runs", "recipes", "models", "levels"}));
  list->add_option("--db", options->db, "SQLite database to read (for runs)")
      ->capture_default_str();
  list->callback([&action, options] { action = [options] { return execute(*options); }; });
}

}  // namespace lpbench::cli
