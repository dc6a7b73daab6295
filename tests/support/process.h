#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace lpbench::testing {

struct ProcessResult {
  int exit_code = -1;  // -signal when killed by a signal
  std::string out;
  std::string err;
};

// Starts argv[0] with its stdout and stderr sent to files; returns the child's pid.
inline pid_t spawn(const std::vector<std::string>& argv, const std::string& out,
                   const std::string& err) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

inline int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1000;
}

inline ProcessResult run_process(const std::vector<std::string>& argv) {
  TempDir dir;
  const pid_t pid = spawn(argv, dir / "out", dir / "err");
  ProcessResult result;
  result.exit_code = wait_for(pid);
  result.out = read_file(dir / "out");
  result.err = read_file(dir / "err");
  return result;
}

}  // namespace lpbench::testing
