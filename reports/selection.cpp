#include "reports/selection.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/env/process.h"
#include "base/errors.h"

namespace lpbench::reports {

namespace {

constexpr std::string_view kForms =
    "sweep:ID[,ID…], run:ID[,ID…], commit:SHA, nightly:N or since:YYYY-MM-DDTHH:MM:SSZ";

[[noreturn]] void bad(std::string_view flag, std::string_view text, std::string_view why) {
  throw InputError(fmt::format("{} '{}': {}; valid forms: {}", flag, text, why, kForms));
}

int64_t parse_positive(std::string_view flag, std::string_view text, std::string_view number) {
  int64_t value = 0;
  const bool digits = !number.empty() && number.size() <= 15 &&
                      number.find_first_not_of("0123456789") == std::string_view::npos;
  if (digits) value = std::stoll(std::string(number));
  if (!digits || value <= 0) bad(flag, text, fmt::format("'{}' is not a positive number", number));
  return value;
}

std::vector<int64_t> parse_ids(std::string_view flag, std::string_view text,
                               std::string_view list) {
  std::vector<int64_t> ids;
  size_t start = 0;
  while (true) {
    const size_t comma = list.find(',', start);
    ids.push_back(parse_positive(flag, text, list.substr(start, comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return ids;
}

// A timestamp as the store writes them ("2026-11-22T03:04:05.678Z"), or its leading part: the
// comparison is textual, so only a prefix of that shape is accepted.
bool looks_like_timestamp(std::string_view t) {
  constexpr std::string_view shape = "dddd-dd-ddTdd:dd:dd";
  if (t.size() < 10) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (i < shape.size()) {
      const bool ok = shape[i] == 'd' ? (c >= '0' && c <= '9') : c == shape[i];
      if (!ok) return false;
    } else if (!((c >= '0' && c <= '9') || c == '.' || c == 'Z')) {
      return false;
    }
  }
  return true;
}

void append_runs(std::vector<store::RunRecord>& out, std::vector<store::RunRecord> runs) {
  for (store::RunRecord& r : runs)
    out.push_back(std::move(r));
}

// The nightly sweeps of this host, in id order.
std::vector<store::SweepRecord> nightly_sweeps(const store::Store& store) {
  store::SweepQuery query;
  query.label = std::string(kNightlyLabel);
  query.host = env::host_name();
  return store.sweeps(query);
}

// The sweeps of this host started at or after a since: selection's time, in id order.
std::vector<int64_t> since_sweeps(const store::Store& store, const Selection& s) {
  store::SweepQuery query;
  query.host = env::host_name();
  query.started_from = s.text;
  std::vector<int64_t> ids;
  for (const store::SweepRecord& sweep : store.sweeps(query))
    ids.push_back(sweep.id);
  return ids;
}

// What a nightly side left out because the other side ran on other GPU models.
struct LeftOut {
  std::set<std::string> models;
  int64_t count = 0;
};

// A nightly side: per series (`key`), the last `count` records, newest first, leaving out the
// other side's (`exclude`) and, where `gpu_models` names some, those of other GPU models (counted
// in `left_out`).
template <typename Record, typename Key>
std::vector<Record> last_of_each_series(std::vector<Record> all, Key key, int64_t count,
                                        const std::set<int64_t>& exclude,
                                        const std::set<std::string>& gpu_models,
                                        LeftOut& left_out) {
  std::sort(all.begin(), all.end(), [](const Record& a, const Record& b) { return a.id > b.id; });
  std::map<std::string, int64_t> taken;
  std::vector<Record> out;
  for (Record& r : all) {
    if (exclude.count(r.id)) continue;
    if (!gpu_models.empty() && !gpu_models.count(gpu_model(r))) {
      left_out.models.insert(gpu_model(r));
      ++left_out.count;
      continue;
    }
    int64_t& n = taken[key(r)];
    if (n >= count) continue;
    ++n;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<store::RunRecord> resolve(const store::Store& store, const Selection& s,
                                      const std::set<int64_t>& exclude,
                                      const std::set<std::string>& gpu_models, LeftOut& left_out) {
  std::vector<store::RunRecord> out;
  switch (s.kind) {
    case Selection::Kind::sweeps:
      for (int64_t id : s.ids) {
        if (!store.sweep(id)) {
          throw InputError(
              fmt::format("{}: there is no sweep {} in this database; `lpbench "
                          "report` lists the sweeps",
                          s.spec, id));
        }
        append_runs(out, store.runs(id));
      }
      break;
    case Selection::Kind::runs:
      for (int64_t id : s.ids) {
        std::optional<store::RunRecord> run = store.run(id);
        if (!run) {
          throw InputError(
              fmt::format("{}: there is no run {} in this database; `lpbench list runs` lists them",
                          s.spec, id));
        }
        out.push_back(std::move(*run));
      }
      break;
    case Selection::Kind::commit:
      out = store.runs_of_commit(s.text);
      break;
    case Selection::Kind::since:
      for (int64_t sweep : since_sweeps(store, s))
        append_runs(out, store.runs(sweep));
      break;
    case Selection::Kind::nightly: {
      std::vector<store::RunRecord> all;
      for (const store::SweepRecord& sweep : nightly_sweeps(store))
        append_runs(all, store.runs(sweep.id));
      out = last_of_each_series(
          std::move(all), [](const store::RunRecord& r) { return r.workload + '\n' + r.recipe; },
          s.count, exclude, gpu_models, left_out);
      break;
    }
  }
  std::sort(out.begin(), out.end(),
            [](const store::RunRecord& a, const store::RunRecord& b) { return a.id < b.id; });
  out.erase(std::unique(
                out.begin(), out.end(),
                [](const store::RunRecord& a, const store::RunRecord& b) { return a.id == b.id; }),
            out.end());
  return out;
}

// The kernel results a selection picks, in id order (see SelectedPair).
std::vector<store::KernelResultRecord> resolve_kernels(const store::Store& store,
                                                       const Selection& s,
                                                       const std::set<int64_t>& exclude,
                                                       const std::set<std::string>& gpu_models,
                                                       LeftOut& left_out) {
  std::vector<store::KernelResultRecord> out;
  auto append = [&](int64_t sweep) {
    for (store::KernelResultRecord& k : store.kernel_results(sweep))
      out.push_back(std::move(k));
  };
  switch (s.kind) {
    case Selection::Kind::sweeps:
      for (int64_t id : s.ids)
        append(id);
      break;
    case Selection::Kind::runs:
    case Selection::Kind::commit:
      break;
    case Selection::Kind::since:
      for (int64_t sweep : since_sweeps(store, s))
        append(sweep);
      break;
    case Selection::Kind::nightly: {
      std::vector<store::KernelResultRecord> all;
      for (const store::SweepRecord& sweep : nightly_sweeps(store))
        for (store::KernelResultRecord& k : store.kernel_results(sweep.id))
          all.push_back(std::move(k));
      out = last_of_each_series(
          std::move(all), [](const store::KernelResultRecord& k) { return k.name; }, s.count,
          exclude, gpu_models, left_out);
      break;
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

template <typename Record>
std::set<int64_t> ids_of(const std::vector<Record>& records) {
  std::set<int64_t> ids;
  for (const Record& r : records)
    ids.insert(r.id);
  return ids;
}

template <typename Record>
std::set<std::string> gpu_models_of(const std::vector<Record>& records) {
  std::set<std::string> models;
  for (const Record& r : records)
    models.insert(gpu_model(r));
  return models;
}

}  // namespace

Selection parse_selection(std::string_view text, std::string_view flag) {
  Selection s;
  s.spec = std::string(text);
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) bad(flag, text, "it has no kind before a ':'");
  const std::string_view kind = text.substr(0, colon);
  const std::string_view value = text.substr(colon + 1);
  if (kind == "sweep") {
    s.kind = Selection::Kind::sweeps;
    s.ids = parse_ids(flag, text, value);
  } else if (kind == "run") {
    s.kind = Selection::Kind::runs;
    s.ids = parse_ids(flag, text, value);
  } else if (kind == "commit") {
    s.kind = Selection::Kind::commit;
    const bool hex = value.size() >= 4 && value.size() <= 40 &&
                     value.find_first_not_of("0123456789abcdef") == std::string_view::npos;
    if (!hex) bad(flag, text, "a commit is 4 to 40 lower-case hex digits");
    s.text = std::string(value);
  } else if (kind == "nightly") {
    s.kind = Selection::Kind::nightly;
    s.count = parse_positive(flag, text, value);
  } else if (kind == "since") {
    s.kind = Selection::Kind::since;
    if (!looks_like_timestamp(value)) {
      bad(flag, text, "the time is not ISO 8601 in UTC like 2026-11-22T03:00:00Z");
    }
    s.text = parse_since(value, flag);
  } else {
    bad(flag, text, fmt::format("unknown kind '{}'", kind));
  }
  return s;
}

std::string parse_since(std::string_view time, std::string_view flag) {
  if (!looks_like_timestamp(time)) {
    throw InputError(fmt::format(
        "{} '{}': the time is not ISO 8601 in UTC like 2026-11-22T03:00:00Z", flag, time));
  }
  // Without its 'Z', the time is a prefix of the stored form and sorts before every later time
  // ("…:00Z" would sort after "…:00.123Z").
  return std::string(time.back() == 'Z' ? time.substr(0, time.size() - 1) : time);
}

std::string gpu_model(const store::RunRecord& run) {
  return run.provenance.gpu_name.value_or(run.device == "cpu" ? "the CPU" : run.device);
}

std::string gpu_model(const store::KernelResultRecord& result) {
  return result.gpu_name.value_or("the CPU");
}

SelectedPair select_runs(const store::Store& store, const Selection& baseline,
                         const Selection& candidate) {
  SelectedPair pair;
  const bool baseline_last =
      baseline.kind == Selection::Kind::nightly || candidate.kind != Selection::Kind::nightly;
  const Selection& first = baseline_last ? candidate : baseline;
  const Selection& last = baseline_last ? baseline : candidate;
  auto& first_runs = baseline_last ? pair.candidate : pair.baseline;
  auto& last_runs = baseline_last ? pair.baseline : pair.candidate;
  auto& first_kernels = baseline_last ? pair.kernel_candidate : pair.kernel_baseline;
  auto& last_kernels = baseline_last ? pair.kernel_baseline : pair.kernel_candidate;

  LeftOut unused;
  first_runs = resolve(store, first, {}, {}, unused);
  first_kernels = resolve_kernels(store, first, {}, {}, unused);
  // A nightly side follows the GPU models the other side ran on.
  std::set<std::string> models = gpu_models_of(first_runs);
  for (const std::string& m : gpu_models_of(first_kernels))
    models.insert(m);
  LeftOut left_out;
  last_runs = resolve(store, last, ids_of(first_runs), models, left_out);
  last_kernels = resolve_kernels(store, last, ids_of(first_kernels), models, left_out);
  if (left_out.count > 0) {
    std::string others;
    for (const std::string& m : left_out.models)
      others += (others.empty() ? "" : ", ") + m;
    std::string mine;
    for (const std::string& m : models)
      mine += (mine.empty() ? "" : ", ") + m;
    pair.notes.push_back(fmt::format(
        "{}: {} result{} measured on {} left out, as {} ran on {}: a GPU model starts its own "
        "series{}",
        last.spec, left_out.count, left_out.count == 1 ? "" : "s", others, first.spec, mine,
        last_runs.empty() && last_kernels.empty() ? ", and this is the first night of it" : ""));
  }
  return pair;
}

}  // namespace lpbench::reports
