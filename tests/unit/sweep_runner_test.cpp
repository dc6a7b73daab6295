// The sweep runner on the CPU: recipes that do not fit together run one after another, each
// built when its turn comes; the load of the machine around each run is recorded, and a run
// beside busy processes is flagged as contended.
#include <gtest/gtest.h>

#include <c10/core/CPUAllocator.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "base/store/store.h"
#include "harness/config/run_config.h"
#include "harness/runner/machine_watch.h"
#include "harness/runner/sweep_runner.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace lpbench::runner {
namespace {

// An independent meter of CPU tensor memory, in front of every other CPU allocator (a higher
// priority than the runner's own counter, which then stays out): the highest number of bytes
// held at once since the last reset, whatever the runner resets.
class MeterAllocator final : public c10::Allocator {
 public:
  static MeterAllocator& install() {
    static MeterAllocator* meter = [] {
      auto* m = new MeterAllocator(c10::GetDefaultCPUAllocator());
      c10::SetCPUAllocator(m, /*priority=*/100);
      return m;
    }();
    return *meter;
  }
  c10::DataPtr allocate(size_t n) override {
    void* base = inner_->raw_allocate(n + 64);
    *static_cast<size_t*>(base) = n;
    const int64_t now = current_ += static_cast<int64_t>(n);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    void* data = static_cast<char*>(base) + 64;
    return {data, data, &release, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
  void reset() { peak_ = current_.load(); }
  int64_t peak() const { return peak_.load(); }

 private:
  explicit MeterAllocator(c10::Allocator* inner) : inner_(inner) {}
  static void release(void* data) {
    void* base = static_cast<char*>(data) - 64;
    install().current_ -= static_cast<int64_t>(*static_cast<size_t*>(base));
    install().inner_->raw_deallocate(base);
  }
  c10::Allocator* inner_;
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
};

// A Llama of 8.4M parameters in 2 layers with a vocabulary of 1000: held with their gradients
// and AdamW state between steps (135 MB), they dominate what a step of 16 tokens adds.
std::string write_model(const lpbench::testing::TempDir& dir) {
  const std::string path = dir / "config.json";
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 1000,
    "hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 2,
    "num_attention_heads": 8, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0, "tie_word_embeddings": false, "rope_scaling": null})",
             f);
  std::fclose(f);
  return path;
}

config::RunConfig small_config(const lpbench::testing::TempDir& dir, const std::string& db,
                               std::vector<std::string> recipes) {
  config::RunConfig c;
  c.workloads = {"model:" + write_model(dir)};
  c.recipes = std::move(recipes);
  c.steps = 2;
  c.warmup_steps = 0;
  c.micro_batch = 1;
  c.seq_len = 16;
  c.device = "cpu";
  c.db = dir / db;
  return c;
}

int64_t sweep_peak(const config::RunConfig& c) {
  const config::ResolvedRun run = config::resolve(c);
  store::Store store = store::Store::open(c.db, store::Store::Mode::write);
  MeterAllocator& meter = MeterAllocator::install();
  meter.reset();
  const SweepOutcome outcome = run_sweep(run, store, "test");
  EXPECT_TRUE(outcome.all_ok());
  return meter.peak();
}

TEST(SequentialSweep, BuildsEachRecipeWhenItsTurnComesSoItsPeakIsOneRecipes) {
  MeterAllocator::install();
  lpbench::testing::TempDir dir;
  const int64_t bf16 = sweep_peak(small_config(dir, "a.db", {"bf16"}));
  const int64_t int8 = sweep_peak(small_config(dir, "b.db", {"int8-tensor"}));
  // What does not fit together runs one recipe after another: a budget that holds the larger
  // recipe alone but not both.
  config::RunConfig both = small_config(dir, "c.db", {"bf16", "int8-tensor"});
  const config::ResolvedRun probe = config::resolve(both);
  const auto& plan = probe.workloads.at(0).memory;
  both.memory_budget_gib = std::max(plan[0].total_gib(), plan[1].total_gib()) * 1.05;
  const config::ResolvedRun run = config::resolve(both);
  ASSERT_FALSE(run.workloads.at(0).interleave);
  EXPECT_NE(run.workloads.at(0).interleave_note.find("one after another"), std::string::npos);
  const int64_t sequential = sweep_peak(both);
  // The allocations repeat exactly (same seed, same sizes): one percent is room enough, and a
  // sweep that built both up front held the second recipe's weights during the first's steps.
  const int64_t one = std::max(bf16, int8);
  EXPECT_LE(sequential, one + one / 100) << "bf16 alone " << bf16 << " B, int8-tensor alone "
                                         << int8 << " B, both in turn " << sequential << " B";
  // Each recipe's run is recorded and ended ok, the second started once the first had ended.
  const store::Store store = store::Store::open(both.db, store::Store::Mode::read);
  const std::vector<store::RunRecord> runs = store.runs();
  ASSERT_EQ(runs.size(), 2U);
  for (const store::RunRecord& r : runs)
    EXPECT_EQ(r.status, store::RunStatus::ok) << r.recipe;
  EXPECT_GE(runs[1].started_at, runs[0].finished_at.value_or(""));
}

// Busy processes on every CPU while a sweep runs: the runs record the load at their start and
// end, and say they were measured under contention.
TEST(MachineWatch, ARunBesideBusyProcessesIsRecordedAsContended) {
  lpbench::testing::TempDir dir;
  std::vector<pid_t> busy;
  for (int64_t i = 0; i < env::online_cpus(); ++i) {
    busy.push_back(lpbench::testing::spawn({"/bin/sh", "-c", "while :; do :; done"},
                                           dir / "busy.out", dir / "busy.err"));
  }
  config::RunConfig c;
  c.workloads = {"model:tiny"};
  c.recipes = {"bf16"};
  c.steps = 40;
  c.device = "cpu";
  c.db = dir / "busy.db";
  const config::ResolvedRun run = config::resolve(c);
  {
    store::Store store = store::Store::open(c.db, store::Store::Mode::write);
    (void)run_sweep(run, store, "test");
  }
  for (pid_t pid : busy) {
    kill(pid, SIGKILL);
    lpbench::testing::wait_for(pid);
  }
  const store::Store store = store::Store::open(c.db, store::Store::Mode::read);
  const store::RunRecord r = store.runs().at(0);
  ASSERT_TRUE(r.contention) << "others' share not flagged";
  EXPECT_NE(r.contention->find("other processes used"), std::string::npos) << *r.contention;
  const auto samples = store.load_samples(r.id);
  ASSERT_EQ(samples.size(), 2U);
  const auto end = std::find_if(samples.begin(), samples.end(),
                                [](const store::LoadSampleRecord& s) { return s.phase == "end"; });
  ASSERT_NE(end, samples.end());
  EXPECT_EQ(end->cpu_count, env::online_cpus());
  ASSERT_TRUE(end->others_cpu_share);
  EXPECT_GE(*end->others_cpu_share, kContendedCpuShare);
}

TEST(MachineWatch, TheContentionRuleNamesWhatWasBusy) {
  store::LoadSampleRecord end;
  end.cpu_count = 2;
  end.load_1m = 3.0;
  end.others_cpu_share = 0.02;
  EXPECT_FALSE(contention(end, std::nullopt));
  end.others_cpu_share = 0.48;
  EXPECT_EQ(contention(end, std::nullopt),
            "other processes used 48 % of the 2 CPUs' time (load average 3.0)");
  end.others_cpu_share = 0.0;
  end.gpu_other_processes = 0;
  EXPECT_EQ(contention(end, 1), "1 other process on the GPU");
  EXPECT_EQ(contention(end, 2), "2 other processes on the GPU");
}

}  // namespace
}  // namespace lpbench::runner
