// Delayed scaling's ring on the host: which slot a turn records into, what it is scaled by, and
// the hand-over from the host's count to the ring's own index once a turn is taken under a CUDA
// graph's capture (the GPU's side of it is tests/gpu/step_graph_test.cpp's).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/torch/amax_history.h"

namespace lpbench::kernels {
namespace {

int32_t bits(float amax) {
  int32_t b = 0;
  std::memcpy(&b, &amax, sizeof b);
  return b;
}

float from_bits(const at::Tensor& amax_bits) {
  const int32_t b = amax_bits.item<int32_t>();
  float f = 0.0F;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

float scale_of(const AmaxHistory::Turn& turn) {
  return from_bits(AmaxHistory::scaling_amax(turn));
}

int64_t ring_index(const AmaxHistory::Turn& turn) {
  return turn.ring[turn.slots()].item<int32_t>();
}

// A history of 2 is a ring of 4 slots: each turn records into its slot, zeroes the next and is
// scaled by the other two, the two amaxes before it.
TEST(AmaxHistoryRing, ATurnIsScaledByTheAmaxesBeforeItAndRecordsIntoItsOwnSlot) {
  AmaxHistory history(2);
  const at::Tensor like = torch::zeros({1});
  EXPECT_FALSE(history.scaling_amax(like).has_value());
  const float amaxes[] = {1.0F, 4.0F, 0.5F, 0.25F, 2.0F, 0.125F};
  // What each turn is scaled by: nothing before the first (it finds its own), then the largest of
  // the last two.
  const float by[] = {0.0F, 1.0F, 4.0F, 4.0F, 0.5F, 2.0F};
  for (int64_t i = 0; i < 6; ++i) {
    const AmaxHistory::Turn turn = history.take_turn(like);
    EXPECT_EQ(turn.first, i == 0);
    EXPECT_EQ(turn.slots(), 4);
    EXPECT_EQ(turn.current, i % 4) << "turn " << i;
    EXPECT_EQ(ring_index(turn), i % 4) << "turn " << i;
    if (i > 0) {
      EXPECT_EQ(scale_of(turn), by[i]) << "turn " << i;
    }
    AmaxHistory::record(turn, bits(amaxes[i]));
    EXPECT_EQ(ring_index(turn), (i + 1) % 4);
    EXPECT_EQ(turn.ring[(i + 1) % 4].item<int32_t>(), 0) << "the next slot is cleared";
  }
  EXPECT_EQ(history.recorded(), 6);
  // The next turn's, asked of the history without a turn: the largest of the last two.
  EXPECT_EQ(from_bits(*history.scaling_amax(like)), 2.0F);
}

// Once a turn is taken while a graph is captured, no later turn names its slot (-1): the ring's
// index, which every record moves on, says which it is, as a replay needs. The amaxes stay those
// the host's count would have given.
TEST(AmaxHistoryRing, ACapturedTurnLeavesThatAndEveryLaterSlotToTheRingsIndex) {
  AmaxHistory counted(2), handed_over(2);
  const at::Tensor like = torch::zeros({1});
  const float amaxes[] = {3.0F, 1.0F, 0.5F, 8.0F, 0.25F, 0.75F, 2.0F};
  for (int64_t i = 0; i < 7; ++i) {
    const AmaxHistory::Turn a = counted.take_turn(like);
    const AmaxHistory::Turn b = handed_over.take_turn(like, /*captured=*/i == 2);
    EXPECT_EQ(b.current, i < 2 ? i : -1) << "turn " << i;
    EXPECT_EQ(ring_index(b), a.current) << "turn " << i;
    if (i > 0) {
      EXPECT_EQ(scale_of(b), scale_of(a)) << "turn " << i;
    }
    AmaxHistory::record(a, bits(amaxes[i]));
    AmaxHistory::record(b, bits(amaxes[i]));
    EXPECT_TRUE(a.ring.equal(b.ring)) << "turn " << i;
  }
}

// A NaN or an Inf recorded into the ring carries on into the scale while it is in the history,
// as the reference's amax would, and leaves it when its slot is cleared.
TEST(AmaxHistoryRing, ANanInTheHistoryScalesEveryTurnItIsPartOf) {
  AmaxHistory history(1);  // 3 slots: a turn is scaled by the one amax before it
  const at::Tensor like = torch::zeros({1});
  const float amaxes[] = {1.0F, std::numeric_limits<float>::quiet_NaN(), 2.0F, 0.5F};
  std::vector<float> scales;
  for (const float amax : amaxes) {
    const AmaxHistory::Turn turn = history.take_turn(like);
    if (!turn.first) scales.push_back(scale_of(turn));
    AmaxHistory::record(turn, bits(amax));
  }
  ASSERT_EQ(scales.size(), 3U);
  EXPECT_EQ(scales[0], 1.0F);
  EXPECT_TRUE(std::isnan(scales[1]));
  EXPECT_EQ(scales[2], 2.0F);
}

}  // namespace
}  // namespace lpbench::kernels
