#include "workloads/models/rope.h"

#include <torch/torch.h>

#include <numbers>

namespace lpbench::workloads {

torch::Tensor rope_inverse_frequencies(const ModelConfig& config) {
  const int64_t dim = config.head_dim;
  torch::Tensor inv_freq =
      torch::pow(config.rope_theta, -torch::arange(0, dim, 2, torch::kDouble) / dim);
  const RopeScaling& s = config.rope_scaling;
  if (s.type != "llama3") return inv_freq;
  // Llama 3.1: wavelengths longer than original_max_position / low_freq_factor are stretched by
  // `factor`, those shorter than original_max_position / high_freq_factor kept, and the band
  // between blended linearly in original_max_position / wavelength.
  const double context = static_cast<double>(s.original_max_position);
  const double low_wavelen = context / s.low_freq_factor;
  const double high_wavelen = context / s.high_freq_factor;
  torch::Tensor wavelen = 2.0 * std::numbers::pi / inv_freq;
  torch::Tensor smooth =
      (context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  torch::Tensor blended = (1.0 - smooth) * inv_freq / s.factor + smooth * inv_freq;
  torch::Tensor scaled = torch::where(wavelen > low_wavelen, inv_freq / s.factor, inv_freq);
  torch::Tensor medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen);
  return torch::where(medium, blended, scaled);
}

std::pair<torch::Tensor, torch::Tensor> rope_tables(const ModelConfig& config,
                                                    int64_t max_seq_len) {
  torch::Tensor angles =
      torch::outer(torch::arange(max_seq_len, torch::kDouble), rope_inverse_frequencies(config));
  return {angles.cos().to(torch::kFloat), angles.sin().to(torch::kFloat)};
}

}  // namespace lpbench::workloads
