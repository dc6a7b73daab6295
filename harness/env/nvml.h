#pragma once

#include <optional>
#include <string>

namespace lpbench::env {

// NVML, loaded at run time (dlopen), so lpbench runs on machines without an NVIDIA driver:
// there every query answers nothing.
class Nvml {
 public:
  static Nvml& instance();
  bool available() const { return available_; }
  std::optional<std::string> driver_version() const;

 private:
  Nvml();
  bool available_ = false;
  void* library_ = nullptr;
};

}  // namespace lpbench::env
