#pragma once

#include <stdexcept>

namespace lpbench {

// Bad input from the user (a flag, a path, a file): its message is one line that says what is
// wrong and what to do. `main` prints it and exits with code 2; nothing stored is changed.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lpbench
