#include "harness/dist/local_launcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "base/store/store.h"
#include "harness/dist/rendezvous.h"

extern char** environ;

namespace lpbench::dist {

namespace {

constexpr std::chrono::seconds kGrace{30};  // beyond the collectives' timeout, for the records

std::vector<pid_t> g_children;  // for the signal handler

void forward_signal(int signal) {
  for (pid_t child : g_children) {
    if (child > 0) kill(child, signal);
  }
}

// This program's own arguments, as the kernel recorded them.
std::vector<std::string> own_command_line() {
  std::ifstream file("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  size_t start = 0;
  while (start < all.size()) {
    const size_t end = all.find('\0', start);
    args.push_back(all.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (args.empty()) throw std::runtime_error("cannot read this process's command line");
  return args;
}

std::vector<char*> pointers(std::vector<std::string>& texts) {
  std::vector<char*> out;
  for (std::string& t : texts)
    out.push_back(t.data());
  out.push_back(nullptr);
  return out;
}

std::string describe_end(int rank, int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    const char* name = sigabbrev_np(signal);
    return fmt::format("rank {} was killed by signal {} (SIG{})", rank, signal,
                       name != nullptr ? name : "?");
  }
  return fmt::format("rank {} exited with code {}", rank, WEXITSTATUS(status));
}

}  // namespace

int launch_local(int nproc, std::chrono::seconds timeout, const std::string& db) {
  c10d::TCPStoreOptions options;
  options.port = 0;  // any free port; the ranks are told which
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = timeout;
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);

  std::vector<std::string> args = own_command_line();
  std::vector<char*> argv = pointers(args);
  // This process's environment less what a launcher sets, built before fork: between fork and
  // exec only async-signal-safe calls.
  std::vector<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (name != "RANK" && name != "LOCAL_RANK" && name != "WORLD_SIZE" &&
        name != "LOCAL_WORLD_SIZE" && name != "MASTER_ADDR" && name != "MASTER_PORT" &&
        name != "LPBENCH_AGENT_STORE") {
      inherited.push_back(entry);
    }
  }
  std::vector<pid_t> children(nproc, -1);
  for (int rank = 0; rank < nproc; ++rank) {
    std::vector<std::string> env = inherited;
    env.push_back(fmt::format("RANK={}", rank));
    env.push_back(fmt::format("LOCAL_RANK={}", rank));
    env.push_back(fmt::format("WORLD_SIZE={}", nproc));
    env.push_back(fmt::format("LOCAL_WORLD_SIZE={}", nproc));
    env.push_back("MASTER_ADDR=127.0.0.1");
    env.push_back(fmt::format("MASTER_PORT={}", store->getPort()));
    env.push_back("LPBENCH_AGENT_STORE=1");
    std::vector<char*> envp = pointers(env);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      // A group of its own: a terminal's Ctrl-C reaches the launcher alone, which passes it on
      // once (a rank that got it twice, from the terminal and from here, would stop at once
      // instead of after the step its peers agree on).
      setpgid(0, 0);
      execve("/proc/self/exe", argv.data(), envp.data());
      _exit(127);
    }
    children[rank] = pid;
  }
  g_children = children;
  signal(SIGINT, forward_signal);
  signal(SIGTERM, forward_signal);

  int running = nproc;
  bool refused = false;
  bool failed = false;
  bool rank0_abnormal = false;
  // When the ranks still running are killed: set by the first rank to end abnormally.
  auto deadline = std::chrono::steady_clock::time_point::max();
  std::string first_end;
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        for (int r = 0; r < nproc; ++r) {
          if (children[r] <= 0) continue;
          fmt::print(stderr, "lpbench: rank {} did not end within {} s of {}: killed\n", r,
                     (timeout + kGrace).count(), first_end);
          kill(children[r], SIGKILL);
        }
        deadline = std::chrono::steady_clock::time_point::max();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (pid < 0) break;
    int rank = 0;
    while (rank < nproc && children[rank] != pid)
      ++rank;
    if (rank == nproc) continue;
    children[rank] = -1;
    g_children[rank] = -1;
    --running;
    const bool normal = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) refused = true;
    if (normal) continue;
    failed = true;
    const std::string what = describe_end(rank, status);
    if (rank == 0 && !WIFEXITED(status)) rank0_abnormal = true;
    store->set(exit_key(rank), std::vector<uint8_t>(what.begin(), what.end()));
    if (WIFSIGNALED(status)) fmt::print(stderr, "lpbench: {}\n", what);
    if (first_end.empty()) {
      deadline = std::chrono::steady_clock::now() + timeout + kGrace;
      first_end = what;
    }
  }
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  // Opening the store for writing marks the runs of a process that is gone as interrupted.
  if (rank0_abnormal) store::Store::open(db, store::Store::Mode::write);
  if (refused) return 2;
  return failed ? 1 : 0;
}

}  // namespace lpbench::dist
