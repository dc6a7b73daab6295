#include "base/env/machine_load.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace lpbench::env {

namespace {

// Fields 14 and 15 of /proc/self/stat (utime, stime), counted after the command name's last ')'
// since the name may hold spaces.
std::optional<int64_t> self_ticks() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  int64_t ticks = 0;
  for (int index = 3; fields >> field && index <= 15; ++index) {
    if (index == 14 || index == 15) ticks += std::stoll(field);
  }
  return ticks;
}

}  // namespace

CpuTimes cpu_times() {
  CpuTimes t;
  std::ifstream in("/proc/stat");
  std::string label;
  // cpu  user nice system idle iowait irq softirq steal guest guest_nice (guest time is already
  // counted in user and nice)
  int64_t v[8] = {};
  if (!(in >> label) || label != "cpu") return t;
  for (int64_t& field : v) {
    if (!(in >> field)) return t;
  }
  const auto self = self_ticks();
  if (!self) return t;
  const int64_t idle = v[3] + v[4];
  t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  t.total = t.busy + idle;
  t.self = *self;
  t.valid = true;
  return t;
}

std::optional<double> others_cpu_share(const CpuTimes& from, const CpuTimes& to) {
  if (!from.valid || !to.valid) return std::nullopt;
  const int64_t total = to.total - from.total;
  if (total <= 0) return std::nullopt;
  const int64_t others = (to.busy - from.busy) - (to.self - from.self);
  // The two files are read a moment apart, so a quiet machine can come out a tick below zero.
  return std::clamp(static_cast<double>(others) / static_cast<double>(total), 0.0, 1.0);
}

std::optional<double> load_average_1m() {
  std::ifstream in("/proc/loadavg");
  double load = 0.0;
  if (!(in >> load)) return std::nullopt;
  return load;
}

int64_t online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

}  // namespace lpbench::env
