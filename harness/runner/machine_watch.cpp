#include "harness/runner/machine_watch.h"

#include <fmt/format.h>

#include <algorithm>

#include "harness/env/nvml.h"

namespace lpbench::runner {

namespace {

bool gpu_watched(const SweepContext& context) {
  return context.run.device.is_cuda() && env::Nvml::instance().available();
}

store::LoadSampleRecord load_sample(const SweepContext& context, const ActiveRun& active,
                                    const char* phase) {
  store::LoadSampleRecord s;
  s.run_id = active.run_id;
  s.phase = phase;
  s.load_1m = env::load_average_1m();
  s.cpu_count = env::online_cpus();
  if (gpu_watched(context)) {
    const int device = context.run.device.index();
    s.gpu_utilization_pct = env::Nvml::instance().utilization_pct(device);
    s.gpu_other_processes = env::Nvml::instance().other_compute_processes(device);
  }
  return s;
}

void sample_clocks(SweepContext& context, ActiveRun& active, const char* phase,
                   std::optional<int64_t> step) {
  if (!gpu_watched(context)) return;
  const env::GpuSample s = env::Nvml::instance().sample(context.run.device.index());
  store::DeviceSampleRecord record;
  record.run_id = active.run_id;
  record.phase = phase;
  record.step = step;
  record.sm_clock_mhz = s.sm_clock_mhz;
  record.memory_clock_mhz = s.memory_clock_mhz;
  record.temperature_c = s.temperature_c;
  record.power_w = s.power_w;
  if (s.throttle_reasons) record.throttle_reasons = static_cast<int64_t>(*s.throttle_reasons);
  record.throttle_text = s.throttle_text;
  context.store.add_device_sample(record);
  if (std::string_view(phase) == "first_measured") {
    active.first_clock_mhz = s.sm_clock_mhz;
    return;
  }
  if (!active.first_clock_mhz || !s.sm_clock_mhz) return;
  const bool fell = env::clock_fell(*active.first_clock_mhz, *s.sm_clock_mhz, s.throttle_reasons);
  context.store.set_clock_fell(active.run_id, fell);
  if (fell) {
    context.store.add_event(
        {0, active.run_id, std::nullopt, "clock_drop",
         fmt::format("SM clock {:.0f} MHz at the first measured step, {:.0f} MHz at the end{}",
                     *active.first_clock_mhz, *s.sm_clock_mhz,
                     s.throttle_text.empty() ? "" : "; slowed by " + s.throttle_text),
         ""});
  }
}

}  // namespace

std::optional<double> step_sm_clock(const SweepContext& context) {
  if (!gpu_watched(context)) return std::nullopt;
  return env::Nvml::instance().sm_clock_mhz(context.run.device.index());
}

std::optional<std::string> contention(const store::LoadSampleRecord& end,
                                      std::optional<int64_t> gpu_others_at_start) {
  std::string why;
  if (end.others_cpu_share && *end.others_cpu_share >= kContendedCpuShare) {
    why = fmt::format("other processes used {:.0f} % of the {} CPUs' time (load average {:.1f})",
                      100.0 * *end.others_cpu_share, end.cpu_count, end.load_1m.value_or(0.0));
  }
  const int64_t gpu_others =
      std::max(gpu_others_at_start.value_or(0), end.gpu_other_processes.value_or(0));
  if (gpu_others > 0) {
    why += fmt::format("{}{} other process{} on the GPU", why.empty() ? "" : "; ", gpu_others,
                       gpu_others == 1 ? "" : "es");
  }
  if (why.empty()) return std::nullopt;
  return why;
}

void watch_start(SweepContext& context, ActiveRun& active) {
  active.cpu_at_start = env::cpu_times();
  const store::LoadSampleRecord start = load_sample(context, active, "start");
  active.gpu_others_at_start = start.gpu_other_processes;
  context.store.add_load_sample(start);
}

void watch_first_measured(SweepContext& context, ActiveRun& active, int64_t step) {
  sample_clocks(context, active, "first_measured", step);
}

void watch_end(SweepContext& context, ActiveRun& active) {
  if (!active.cpu_at_start.valid) return;  // never started: built nothing, measured nothing
  sample_clocks(context, active, "end", std::nullopt);
  store::LoadSampleRecord end = load_sample(context, active, "end");
  end.others_cpu_share = env::others_cpu_share(active.cpu_at_start, env::cpu_times());
  context.store.add_load_sample(end);
  const std::optional<std::string> why = contention(end, active.gpu_others_at_start);
  context.store.set_contention(active.run_id, why);
  if (why) {
    context.message(fmt::format("{}: measured under contention: {}", active.recipe->name, *why));
  }
}

}  // namespace lpbench::runner
