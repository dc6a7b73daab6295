#pragma once

namespace lpbench::runner {

// SIGINT and SIGTERM ask a sweep to stop after the current step: its runs end `interrupted`
// with every finished step kept. A second signal ends the process at once.
class StopSignal {
 public:
  StopSignal();   // installs the handlers
  ~StopSignal();  // restores the previous ones
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;

  static bool requested();
  static int signal_number();  // the signal that asked, 0 if none

  // Data parallel: the ranks must stop after the same step, or one waits in a collective for a
  // peer that left. From use_agreement() on, requested() is what the ranks last agreed (the
  // runner reduces arrived() over them after every step and passes the result to agree()).
  static void use_agreement();
  static bool arrived();  // a signal reached this process
  static void agree(bool stop);
};

}  // namespace lpbench::runner
