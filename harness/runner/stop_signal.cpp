#include "harness/runner/stop_signal.h"

#include <csignal>

namespace lpbench::runner {

namespace {

volatile std::sig_atomic_t g_signal = 0;
bool g_use_agreement = false;
bool g_agreed = false;
struct sigaction g_previous_int {};
struct sigaction g_previous_term {};

extern "C" void on_stop_signal(int signal) {
  if (g_signal != 0) {
    // Asked twice: stop now, the way the default action would.
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  g_signal = signal;
}

}  // namespace

StopSignal::StopSignal() {
  g_signal = 0;
  g_use_agreement = false;
  g_agreed = false;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

StopSignal::~StopSignal() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

bool StopSignal::requested() {
  return g_use_agreement ? g_agreed : g_signal != 0;
}

int StopSignal::signal_number() {
  // A rank stopped by its peers' agreement may not have had a signal of its own.
  return g_signal != 0 ? static_cast<int>(g_signal) : (g_agreed ? SIGINT : 0);
}

void StopSignal::use_agreement() {
  g_use_agreement = true;
}

bool StopSignal::arrived() {
  return g_signal != 0;
}

void StopSignal::agree(bool stop) {
  g_agreed = g_agreed || stop;
}

}  // namespace lpbench::runner
