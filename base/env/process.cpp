#include "base/env/process.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

namespace lpbench::env {

namespace {

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

// Field 22 of /proc/<pid>/stat: start time in clock ticks since boot. The command name (field
// 2) may hold spaces and parentheses, so fields are counted after its last ')'.
std::string start_ticks(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return {};
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  for (int index = 3; fields >> field; ++index) {
    if (index == 22) return field;
  }
  return {};
}

}  // namespace

ProcessIdentity current_process() {
  const int64_t pid = getpid();
  return {pid, boot_id() + "/" + start_ticks(pid)};
}

bool is_alive(const ProcessIdentity& process) {
  const std::string ticks = start_ticks(process.pid);
  return !ticks.empty() && process.start == boot_id() + "/" + ticks;
}

std::string host_name() {
  char buffer[256] = {};
  if (gethostname(buffer, sizeof(buffer) - 1) != 0) return "unknown";
  return buffer;
}

}  // namespace lpbench::env
