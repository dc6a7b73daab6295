#pragma once

#include <string>
#include <vector>

namespace lpbench::dist {

// Runs this program again with `args` (args[0] is its name as the child sees it), its output
// going where this process's goes, and waits: the exit code, or 128 + the signal that ended it.
// For a command that must start processes of its own, as a reproduced row that needs several
// ranks does through `lpbench run --nproc-per-node`.
int run_self(const std::vector<std::string>& args);

}  // namespace lpbench::dist
