// The multiply-high division the element-wise kernels split their indices with
// (kernels/cuda/fast_divmod.cuh), on the CPU: host and device run the same arithmetic.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cuda/fast_divmod.cuh"

namespace lpbench::cuda {
namespace {

void expect_divides(const FastDivmod& f, uint32_t n) {
  const uint32_t d = f.divisor;
  uint32_t q = 0;
  const uint32_t r = f.divmod(n, q);
  ASSERT_EQ(q, n / d) << n << " / " << d;
  ASSERT_EQ(r, n % d) << n << " % " << d;
}

TEST(FastDivmod, EveryIndexUpToSixtyFiveThousandBySmallDivisors) {
  for (uint32_t d = 1; d <= 300; ++d) {
    const FastDivmod f(d);
    for (uint32_t n = 0; n < 65536; ++n)
      expect_divides(f, n);
  }
}

TEST(FastDivmod, TheIndicesAroundEveryMultipleAndTheLimit) {
  // The divisors the kernels meet (heads, tokens, groups, vectors a row) and the hard ones:
  // powers of two, their neighbours, large primes, the largest allowed.
  std::vector<uint32_t> divisors = {3,    7,    40,    48,    1376,    1536,       4096,
                                    4097, 8191, 32768, 65537, 1000003, 2147483647u};
  for (uint32_t s = 0; s < 31; ++s) {
    divisors.push_back(uint32_t{1} << s);
    divisors.push_back((uint32_t{1} << s) + 1);
    if (s > 1) divisors.push_back((uint32_t{1} << s) - 1);
  }
  std::mt19937 random(7);
  for (int i = 0; i < 200; ++i)
    divisors.push_back(1 + random() % (kFastDivmodLimit - 1));
  const uint32_t last = kFastDivmodLimit - 1;
  for (const uint32_t d : divisors) {
    const FastDivmod f(d);
    for (const uint32_t n : {0u, 1u, d - 1, d, d + 1, last, last - 1, last - d})
      if (n < kFastDivmodLimit) expect_divides(f, n);
    // Around multiples of d spread over the whole range.
    for (uint64_t k = 1; k * d < kFastDivmodLimit; k = k * 3 + 1) {
      const auto m = static_cast<uint32_t>(k * d);
      expect_divides(f, m - 1);
      expect_divides(f, m);
      if (m + 1 < kFastDivmodLimit) expect_divides(f, m + 1);
    }
    for (int i = 0; i < 2000; ++i)
      expect_divides(f, static_cast<uint32_t>(random() % kFastDivmodLimit));
  }
}

}  // namespace
}  // namespace lpbench::cuda
