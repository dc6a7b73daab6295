#pragma once

#include <cstdint>
#include <string>

namespace lpbench::env {

// A process as the store remembers it: a pid alone can be reused, so it is kept together with
// the boot id and the process's start time ("<boot id>/<start ticks>").
struct ProcessIdentity {
  int64_t pid = 0;
  std::string start;
};

ProcessIdentity current_process();

// Whether the process is still running on this machine. Only meaningful for runs recorded on
// this host.
bool is_alive(const ProcessIdentity& process);

std::string host_name();

}  // namespace lpbench::env
