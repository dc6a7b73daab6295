// Data parallel on CPU ranks (Gloo), as a user starts it: `lpbench run --nproc-per-node N` and a
// launcher's environment (RANK, WORLD_SIZE, ...). The sharded step against one process on the
// same global batch, bad input on every rank, and a rank killed mid-run.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <dirent.h>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "base/store/store.h"
#include "tests/support/process.h"
#include "tests/support/programs.h"
#include "tests/support/sqlite_query.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using std::chrono::steady_clock;
using testing::run_process;
using testing::ScopedEnv;
using testing::TempDir;

std::vector<std::string> tiny_run(const std::string& db, const std::string& recipes,
                                  int micro_batch, int steps) {
  return {LPBENCH_BINARY,  "run",
          "--workload",    "model:tiny",
          "--recipes",     recipes,
          "--micro-batch", std::to_string(micro_batch),
          "--steps",       std::to_string(steps),
          "--seed",        "0",
          "--device",      "cpu",
          "--db",          db};
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// A TCP port of 127.0.0.1 nothing listens on (free when asked).
int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  bind(s, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(s, reinterpret_cast<sockaddr*>(&address), &length);
  close(s);
  return ntohs(address.sin_port);
}

struct Trained {
  std::vector<double> loss, grad_norm;
  store::RunRecord run;
};

// Each recipe's run of the database's only sweep.
std::map<std::string, Trained> trained(const std::string& db) {
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  std::map<std::string, Trained> out;
  for (const store::RunRecord& r : store.runs()) {
    Trained& t = out[r.recipe];
    t.run = r;
    for (const store::StepRecord& s : store.steps(r.id)) {
      t.loss.push_back(s.loss);
      t.grad_norm.push_back(s.grad_norm);
    }
  }
  return out;
}

double relative(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

double mean_of_last(const std::vector<double>& values, size_t count) {
  double sum = 0.0;
  for (size_t i = values.size() - count; i < values.size(); ++i)
    sum += values[i];
  return sum / static_cast<double>(count);
}

// Two and three Gloo ranks of micro-batch 2 against one process of micro-batch 4 and 6: the same
// global batch. Before any update (step 0) the loss is the global batch's up to the order of the
// sums (BF16 to 1e-6), and so is the gradient norm up to BF16's rounding of each rank's gradient,
// which is scaled by 1/(its own tokens) (exact for 2 ranks, not for 3: 1e-2). int8-tensor: each
// rank quantizes its own rows with its own tensorwise scale (as any data-parallel INT8 training
// does), so its products differ slightly from the whole batch's: 1e-3 and 1e-2. After that the
// trajectories part the way any two BF16 trainings do whose weights differ in the last bit (a
// one-ulp change of the clipping coefficient moved the tiny model's step-3 gradient norm by 5 %,
// measured), so later steps are held to what a sharding bug would break: every loss within 3 %,
// and the fall of the loss over 20 steps within 6 % of one process's. int8-tensor's ranks run
// products of their own scales, a numerically other training than the whole batch's, and how far
// 20 steps carry the two apart depends on the CPU's kernels: measured with torch's AVX-512, AVX2
// and plain kernels (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA), every loss within 0.3-1.5 % (BF16)
// and 1.2-2.3 % (int8-tensor), the falls within 0.1-2.8 % and 2.4-9.9 %. So int8-tensor is held
// to 5 % and 15 %; a sharding bug shows in BF16's bounds, whose sharding code is the same.
TEST(DataParallel, TwoAndThreeGlooRanksTrainAsOneProcessOnTheGlobalBatch) {
  constexpr int kSteps = 20;
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    TempDir dir;
    const std::string one_db = dir / "one.db";
    const std::string dp_db = dir / "dp.db";
    const testing::ProcessResult one =
        run_process(tiny_run(one_db, "bf16,int8-tensor", 2 * ranks, kSteps));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const testing::ProcessResult dp =
        run_process(with(tiny_run(dp_db, "bf16,int8-tensor", 2, kSteps),
                         {"--nproc-per-node", std::to_string(ranks), "--regions"}));
    ASSERT_EQ(dp.exit_code, 0) << dp.err;

    const auto single = trained(one_db);
    const auto sharded = trained(dp_db);
    ASSERT_EQ(sharded.size(), 2U);
    for (const auto& [recipe, t] : sharded) {
      SCOPED_TRACE(recipe);
      const Trained& reference = single.at(recipe);
      ASSERT_EQ(t.loss.size(), static_cast<size_t>(kSteps));
      ASSERT_EQ(reference.loss.size(), static_cast<size_t>(kSteps));
      const bool bf16 = recipe == "bf16";
      EXPECT_LT(relative(t.loss[0], reference.loss[0]), bf16 ? 1e-6 : 1e-3);
      EXPECT_LT(relative(t.grad_norm[0], reference.grad_norm[0]), 1e-2);
      for (int s = 0; s < kSteps; ++s)
        EXPECT_LT(relative(t.loss[s], reference.loss[s]), bf16 ? 3e-2 : 5e-2) << "step " << s;
      const double fall = t.loss[0] - mean_of_last(t.loss, 5);
      const double reference_fall = reference.loss[0] - mean_of_last(reference.loss, 5);
      EXPECT_GT(reference_fall, 0.2);
      EXPECT_LT(relative(fall, reference_fall), bf16 ? 0.06 : 0.15)
          << fall << " against " << reference_fall;
      // The run says how it was trained, and counts every rank's tokens.
      EXPECT_EQ(t.run.world_size, ranks);
      EXPECT_EQ(t.run.sharding.value_or(""), "zero1 (gloo)");
      EXPECT_EQ(t.run.tokens_per_step, reference.run.tokens_per_step);
      EXPECT_EQ(reference.run.world_size, 1);
      EXPECT_FALSE(reference.run.sharding.has_value());
      // Rank 0 gathered every rank's figures, communication included (--regions).
      const store::Store store = store::Store::open(dp_db, store::Store::Mode::read);
      const std::vector<store::RankRecord> figures = store.ranks(t.run.id);
      ASSERT_EQ(figures.size(), static_cast<size_t>(ranks));
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(figures[r].rank, r);
        ASSERT_TRUE(figures[r].step_ms.has_value());
        EXPECT_GT(*figures[r].step_ms, 0.0);
        ASSERT_TRUE(figures[r].comm_ms.has_value());
        EXPECT_GT(*figures[r].comm_ms, 0.0);
        EXPECT_LT(*figures[r].comm_ms, *figures[r].step_ms);
      }
    }
    // The report shows how the runs were trained and each rank's figures.
    const testing::ProcessResult report = run_process({LPBENCH_BINARY, "report", "--db", dp_db});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    EXPECT_NE(report.out.find("Data parallel"), std::string::npos) << report.out;
    EXPECT_NE(report.out.find("zero1 (gloo)"), std::string::npos) << report.out;
    EXPECT_NE(report.out.find("cpu × " + std::to_string(ranks)), std::string::npos) << report.out;
  }
}

// Under a tensorwise recipe each rank quantizes its own micro-batch with its own scale, as one
// process's micro-batches do under --grad-accum: the one-process twin of 2 ranks of micro-batch 2
// is micro-batch 2 × 2 accumulated, whose first loss is the same mean of the same two quantized
// forwards (measured on three seeds: equal to the last of 8 printed digits; one process of
// micro-batch 4, which scales the whole batch at once, 6e-5 apart) and whose first gradient is
// the same sum of two quantized backwards, added in another order (the norms 3e-6 apart; 1e-3
// from micro-batch 4's). A rank that quantized with another scale
// (the whole batch's, or another rank's) would miss both bounds.
TEST(DataParallel, Int8RanksQuantizeAsTheMicroBatchesOfOneProcessDo) {
  TempDir dir;
  const std::string accumulated_db = dir / "accumulated.db";
  const std::string dp_db = dir / "dp.db";
  const testing::ProcessResult accumulated =
      run_process(with(tiny_run(accumulated_db, "int8-tensor", 2, 2), {"--grad-accum", "2"}));
  ASSERT_EQ(accumulated.exit_code, 0) << accumulated.err;
  const testing::ProcessResult dp =
      run_process(with(tiny_run(dp_db, "int8-tensor", 2, 2), {"--nproc-per-node", "2"}));
  ASSERT_EQ(dp.exit_code, 0) << dp.err;
  const Trained one = trained(accumulated_db).at("int8-tensor");
  const Trained ranks = trained(dp_db).at("int8-tensor");
  ASSERT_EQ(ranks.run.world_size, 2);
  ASSERT_FALSE(one.loss.empty());
  ASSERT_FALSE(ranks.loss.empty());
  EXPECT_LT(relative(ranks.loss[0], one.loss[0]), 1e-6)
      << ranks.loss[0] << " against " << one.loss[0];
  EXPECT_LT(relative(ranks.grad_norm[0], one.grad_norm[0]), 1e-4)
      << ranks.grad_norm[0] << " against " << one.grad_norm[0];
}

// ZeRO stages 2 and 3 against stage 1 on the same ranks and batch (with activation
// checkpointing, which the layer-sharded stages need): every gradient element is the same sum
// (a + b, or a + b + c) reduced layer by layer instead of all at once, every master the same
// update, so stage 2 and stage 3 give the same bits as each other, and stage 1's losses up to
// the global norm's order of summation. That order can move the clipping coefficient by an ulp
// (it depends on the CPU's kernels: an AMD EPYC gave the same bits for 12 steps, an AVX-512 Xeon
// differs from step 1 on three ranks), so the first update is held tight (1e-4; one wrong by 1 %
// would move step 1's loss by about 3e-4) and the later steps as two trainings part whose weights
// differ in the last bit: BF16 1e-3, int8-tensor 1e-2, whose rounding flips amplify the ulp
// (measured on the Xeon, three ranks: 1.6e-3 at step 6; BF16 2.7e-4).
// Three ranks leave the layers' sizes indivisible, so their slices are padded.
TEST(DataParallel, ZeroTwoAndThreeShardLayerByLayerAndTrainAsZeroOne) {
  constexpr int kSteps = 12;
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    TempDir dir;
    std::map<std::string, std::map<std::string, Trained>> by_stage;
    for (const std::string stage : {"zero1", "zero2", "zero3"}) {
      const std::string db = dir / (stage + ".db");
      const testing::ProcessResult r =
          run_process(with(tiny_run(db, "bf16,int8-tensor", 2, kSteps),
                           {"--nproc-per-node", std::to_string(ranks), "--sharding", stage,
                            "--activation-checkpointing", "--regions"}));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      by_stage[stage] = trained(db);
    }
    for (const std::string recipe : {"bf16", "int8-tensor"}) {
      SCOPED_TRACE(recipe);
      const Trained& zero1 = by_stage["zero1"].at(recipe);
      const Trained& zero2 = by_stage["zero2"].at(recipe);
      const Trained& zero3 = by_stage["zero3"].at(recipe);
      ASSERT_EQ(zero1.loss.size(), static_cast<size_t>(kSteps));
      EXPECT_EQ(zero2.loss, zero3.loss);
      EXPECT_EQ(zero2.grad_norm, zero3.grad_norm);
      EXPECT_EQ(zero3.loss[0], zero1.loss[0]);
      EXPECT_LT(relative(zero3.loss[1], zero1.loss[1]), 1e-4);
      const double apart = recipe == "bf16" ? 1e-3 : 1e-2;
      for (int s = 2; s < kSteps; ++s)
        EXPECT_LT(relative(zero3.loss[s], zero1.loss[s]), apart) << "step " << s;
      EXPECT_EQ(zero2.run.sharding.value_or(""), "zero2 (gloo)");
      EXPECT_EQ(zero3.run.sharding.value_or(""), "zero3 (gloo)");
      // Each layer's gather and reduction is a collective of its own, timed where it waits.
      const store::Store store = store::Store::open(dir / "zero3.db", store::Store::Mode::read);
      const std::vector<store::RankRecord> figures = store.ranks(zero3.run.id);
      ASSERT_EQ(figures.size(), static_cast<size_t>(ranks));
      ASSERT_TRUE(figures[0].comm_ms.has_value());
      EXPECT_GT(*figures[0].comm_ms, 0.0);
    }
  }
}

// Scaling efficiency: against the newest one-process run in the database with one rank's batch
// (on this 2-core machine it is low: the figure is what is tested, not its size).
TEST(DataParallel, TheReportGivesScalingEfficiencyAgainstAOneProcessRunAlike) {
  TempDir dir;
  const std::string db = dir / "scaling.db";
  ASSERT_EQ(run_process(tiny_run(db, "bf16", 2, 12)).exit_code, 0);
  const testing::ProcessResult dp =
      run_process(with(tiny_run(db, "bf16", 2, 12), {"--nproc-per-node", "2"}));
  ASSERT_EQ(dp.exit_code, 0) << dp.err;
  const testing::ProcessResult report = run_process({LPBENCH_BINARY, "report", "--db", db});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const std::string marker = " % (run 1)";
  const size_t at = report.out.find(marker);
  ASSERT_NE(at, std::string::npos) << report.out;
  const size_t start = report.out.rfind(' ', at - 1) + 1;
  const double efficiency = std::stod(report.out.substr(start, at - start));
  EXPECT_GT(efficiency, 0.0);
  EXPECT_LT(efficiency, 150.0);
}

// The same binary started as torchrun starts it: world size 1 on Gloo trains as one process (the
// c10d path with nothing to reduce): the first step's loss and gradient norm to the last bits,
// later losses to 1 % (the norm's sum in another order moves the clipping in its last bit).
TEST(DataParallel, ALaunchersEnvironmentMakesARankAndWorldSizeOneMatchesOneProcess) {
  TempDir dir;
  const std::string one_db = dir / "one.db";
  const std::string dp_db = dir / "dp.db";
  ASSERT_EQ(run_process(tiny_run(one_db, "bf16", 4, 5)).exit_code, 0);
  {
    const ScopedEnv world("WORLD_SIZE", "1");
    const ScopedEnv rank("RANK", "0");
    const ScopedEnv local("LOCAL_RANK", "0");
    const ScopedEnv address("MASTER_ADDR", "127.0.0.1");
    const ScopedEnv port("MASTER_PORT", std::to_string(free_port()));
    const testing::ProcessResult dp = run_process(tiny_run(dp_db, "bf16", 4, 5));
    ASSERT_EQ(dp.exit_code, 0) << dp.err;
  }
  const auto single = trained(one_db).at("bf16");
  const auto ranked = trained(dp_db).at("bf16");
  ASSERT_EQ(ranked.loss.size(), 5U);
  EXPECT_LT(relative(ranked.loss[0], single.loss[0]), 1e-6);
  EXPECT_LT(relative(ranked.grad_norm[0], single.grad_norm[0]), 1e-4);
  for (size_t s = 0; s < 5; ++s)
    EXPECT_LT(relative(ranked.loss[s], single.loss[s]), 1e-2) << "step " << s;
  EXPECT_EQ(ranked.run.world_size, 1);
  EXPECT_EQ(ranked.run.sharding.value_or(""), "zero1 (gloo)");
}

// Bad input: one line naming the problem, exit 2 (on every rank), no database.
TEST(DataParallel, BadInputExitsTwoOnEveryRankAndWritesNothing) {
  TempDir dir;
  const std::string db = dir / "never.db";
  {
    const testing::ProcessResult r = run_process(
        with({LPBENCH_BINARY, "run", "--workload", "layer:tiny", "--device", "cpu", "--db", db},
             {"--nproc-per-node", "2"}));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("trains model workloads only"), std::string::npos) << r.err;
  }
  {
    const testing::ProcessResult r =
        run_process(with(tiny_run(db, "bf16", 2, 3), {"--nproc-per-node", "0"}));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--nproc-per-node"), std::string::npos) << r.err;
  }
  {
    // A rank that cannot reach rank 0's store gives up after --dist-timeout.
    const ScopedEnv world("WORLD_SIZE", "2");
    const ScopedEnv rank("RANK", "1");
    const ScopedEnv address("MASTER_ADDR", "127.0.0.1");
    const ScopedEnv port("MASTER_PORT", std::to_string(free_port()));
    const auto start = steady_clock::now();
    const testing::ProcessResult r =
        run_process(with(tiny_run(db, "bf16", 2, 3), {"--dist-timeout", "3"}));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("cannot reach the rendezvous at 127.0.0.1:"), std::string::npos) << r.err;
    EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(60));
  }
  {
    const ScopedEnv world("WORLD_SIZE", "2");
    const ScopedEnv rank("RANK", "x");
    const testing::ProcessResult r = run_process(tiny_run(db, "bf16", 2, 3));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("RANK='x' is not an integer"), std::string::npos) << r.err;
  }
  {
    // Two ranks started with different arguments: both refuse, with the same line.
    const ScopedEnv world("WORLD_SIZE", "2");
    const ScopedEnv address("MASTER_ADDR", "127.0.0.1");
    const ScopedEnv port("MASTER_PORT", std::to_string(free_port()));
    pid_t pids[2];
    for (int r = 0; r < 2; ++r) {
      const ScopedEnv rank("RANK", std::to_string(r));
      pids[r] =
          testing::spawn(tiny_run(db, "bf16", 2, r == 0 ? 3 : 4), dir / ("out" + std::to_string(r)),
                         dir / ("err" + std::to_string(r)));
    }
    for (int r = 0; r < 2; ++r) {
      EXPECT_EQ(testing::wait_for(pids[r]), 2) << "rank " << r;
      const std::string err = testing::read_file(dir / ("err" + std::to_string(r)));
      EXPECT_NE(err.find("rank 1 was started with a different configuration from rank 0's"),
                std::string::npos)
          << err;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(db));
}

// The pid of the launcher's child that is rank `rank` (from its environment), or -1.
pid_t rank_pid(pid_t launcher, int rank) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  while (dirent* entry = readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat("/proc/" + name + "/stat");
    std::string pid, comm, state;
    pid_t parent = 0;
    stat >> pid >> comm >> state >> parent;
    if (parent != launcher) continue;
    std::ifstream environ("/proc/" + name + "/environ", std::ios::binary);
    std::string variable;
    while (std::getline(environ, variable, '\0')) {
      if (variable == "RANK=" + std::to_string(rank)) found = std::stoi(name);
    }
  }
  closedir(proc);
  return found;
}

// Whether rank 0 recorded `count` steps into `db` within two minutes (polled).
bool steps_recorded(const std::string& db, int64_t count) {
  const auto start = steady_clock::now();
  while (steady_clock::now() - start < std::chrono::seconds(120)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (!std::filesystem::exists(db)) continue;
    const std::string stored = testing::query_text(db, "SELECT count(*) FROM steps");
    if (!stored.empty() && std::stoll(stored) >= count) return true;
  }
  return false;
}

// A rank killed mid-run: the launcher names it, rank 0 ends the run `failed` naming it within the
// collectives' timeout, and every step finished before is kept.
TEST(DataParallel, AKilledRankEndsTheRunFailedNamingItAndKeepsEveryFinishedStep) {
  TempDir dir;
  const std::string db = dir / "dp.db";
  const pid_t launcher = testing::spawn(
      with(tiny_run(db, "bf16", 2, 100000), {"--nproc-per-node", "2", "--dist-timeout", "20"}),
      dir / "out", dir / "err");
  ASSERT_TRUE(steps_recorded(db, 5)) << testing::read_file(dir / "err");
  const pid_t victim = rank_pid(launcher, 1);
  ASSERT_GT(victim, 0);
  kill(victim, SIGKILL);
  const auto killed = steady_clock::now();
  EXPECT_EQ(testing::wait_for(launcher), 1);
  EXPECT_LT(steady_clock::now() - killed, std::chrono::seconds(60));
  const std::string err = testing::read_file(dir / "err");
  EXPECT_NE(err.find("rank 1 was killed by signal 9 (SIGKILL)"), std::string::npos) << err;

  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0].status, store::RunStatus::failed);
  EXPECT_NE(runs[0].error.value_or("").find("rank 1 was killed by signal 9"), std::string::npos)
      << runs[0].error.value_or("");
  const auto steps = store.steps(runs[0].id);
  ASSERT_GE(steps.size(), 5U);
  for (size_t i = 0; i < steps.size(); ++i)
    EXPECT_EQ(steps[i].step, static_cast<int64_t>(i));
}

// Ctrl-C (SIGINT to the launcher): every rank stops after the same step, the run reads
// `interrupted` with every finished step kept, and nothing waits out the timeout.
TEST(DataParallel, ASignalStopsEveryRankAfterTheSameStep) {
  TempDir dir;
  const std::string db = dir / "dp.db";
  const pid_t launcher = testing::spawn(
      with(tiny_run(db, "bf16", 2, 100000), {"--nproc-per-node", "2", "--dist-timeout", "60"}),
      dir / "out", dir / "err");
  ASSERT_TRUE(steps_recorded(db, 5)) << testing::read_file(dir / "err");
  kill(launcher, SIGINT);
  const auto stopped = steady_clock::now();
  EXPECT_EQ(testing::wait_for(launcher), 1);
  EXPECT_LT(steady_clock::now() - stopped, std::chrono::seconds(30));
  const store::Store store = store::Store::open(db, store::Store::Mode::read);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 1U);
  EXPECT_EQ(runs[0].status, store::RunStatus::interrupted) << runs[0].error.value_or("");
  const auto steps = store.steps(runs[0].id);
  ASSERT_GE(steps.size(), 5U);
  for (size_t i = 0; i < steps.size(); ++i)
    EXPECT_EQ(steps[i].step, static_cast<int64_t>(i));
  EXPECT_EQ(testing::read_file(dir / "err").find("did not end within"), std::string::npos);
}

}  // namespace
}  // namespace lpbench
