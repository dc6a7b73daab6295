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
};

}  // namespace lpbench::runner
