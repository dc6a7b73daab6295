// Hostile input: damaged, locked, unwritable and full databases, malformed config.json and token
// files, absurd sizes. Each: one line on stderr naming the problem, exit code 2, and the data
// already stored left as it was.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "tests/support/process.h"
#include "tests/support/sqlite_query.h"
#include "tests/support/temp_dir.h"

namespace lpbench {
namespace {

using testing::query_text;
using testing::read_file;
using testing::run_process;
using testing::TempDir;
using testing::write_file;

std::string last_line(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && trimmed.back() == '\n')
    trimmed.pop_back();
  const size_t newline = trimmed.rfind('\n');
  return newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
}

class CliHostileInput : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_ / "existing.db";
    const auto made = run_process({LPBENCH_BINARY, "run", "--steps", "3", "--device", "cpu",
                                   "--seq-len", "8", "--recipes", "bf16", "--db", db_});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    // lpbench's last connection checkpointed the WAL into the file and removed it.
    ASSERT_FALSE(testing::exists(db_ + "-wal"));
  }

  // `lpbench run` of a few tiny steps into `db`, without the binary (expect_rejected adds it).
  static std::vector<std::string> tiny_run(const std::string& db) {
    return {"run", "--steps",   "3",    "--device", "cpu", "--seq-len",
            "8",   "--recipes", "bf16", "--db",     db};
  }
  static std::vector<std::string> with_binary(std::vector<std::string> args) {
    args.insert(args.begin(), LPBENCH_BINARY);
    return args;
  }

  // Refused before anything is written: exactly one line, exit 2, `watched` byte for byte.
  void expect_rejected(const std::string& name, const std::vector<std::string>& args,
                       const std::string& expected, const std::string& watched) {
    const std::string before = read_file(watched);
    std::vector<std::string> argv{LPBENCH_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    const testing::ProcessResult result = run_process(argv);
    EXPECT_EQ(result.exit_code, 2) << name << ": " << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1)
        << name << ": " << result.err;
    EXPECT_EQ(result.err.rfind("lpbench: error: ", 0), 0U) << name << ": " << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << name << ": " << result.err;
    EXPECT_TRUE(read_file(watched) == before) << name << " changed " << watched;
    ++tried_;
  }

  void expect_run_rejected(const std::string& name, std::vector<std::string> extra,
                           const std::string& expected) {
    std::vector<std::string> args{"run", "--device", "cpu", "--db", db_};
    if (std::find(extra.begin(), extra.end(), "--steps") == extra.end()) {
      args.insert(args.end(), {"--steps", "2"});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    expect_rejected(name, args, expected, db_);
  }

  TempDir dir_;
  std::string db_;
  int tried_ = 0;
};

TEST_F(CliHostileInput, TruncatedDatabase) {
  const std::string content = read_file(db_);
  ASSERT_GT(content.size(), 4 * 4096U);
  const std::string truncated = dir_ / "truncated.db";
  // Cut mid-way, on a page boundary and mid-page.
  for (size_t keep : {content.size() / 2 / 4096 * 4096, content.size() / 2 + 100}) {
    write_file(truncated, content.substr(0, keep));
    expect_rejected("run, truncated", tiny_run(truncated), "restore it from a copy", truncated);
    expect_rejected("report, truncated", {"report", "--db", truncated}, "restore it from a copy",
                    truncated);
  }
}

TEST_F(CliHostileInput, CorruptDatabase) {
  // Random bytes over the head of every page after the first (page headers and cell pointers),
  // the first page kept so that the file still says it is SQLite.
  std::string content = read_file(db_);
  std::mt19937 rng(8);
  for (size_t page = 4096; page + 200 <= content.size(); page += 4096) {
    for (size_t i = 0; i < 200; ++i)
      content[page + i] = static_cast<char>(rng());
  }
  const std::string corrupt = dir_ / "corrupt.db";
  write_file(corrupt, content);
  expect_rejected("run, corrupt", tiny_run(corrupt), "restore it from a copy", corrupt);
  expect_rejected("report, corrupt", {"report", "--db", corrupt}, "restore it from a copy",
                  corrupt);
  expect_rejected("export, corrupt", {"export", "--db", corrupt, "--out", dir_ / "csv"},
                  "restore it from a copy", corrupt);
}

// Another process holds the write lock past lpbench's busy timeout (10 s): `run` gives up with
// one line and writes nothing; `report` still reads (WAL readers do not wait for a writer).
TEST_F(CliHostileInput, DatabaseLockedByAnotherProcess) {
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db_.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  const std::string sweeps = query_text(db_, "SELECT count(*) FROM sweeps");
  const auto run = run_process(with_binary(tiny_run(db_)));
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find("stayed locked by another process"), std::string::npos) << run.err;
  const auto report = run_process({LPBENCH_BINARY, "report", "--db", db_});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_EQ(query_text(db_, "SELECT count(*) FROM sweeps"), sweeps);
  EXPECT_EQ(query_text(db_, "PRAGMA integrity_check"), "ok");
}

// Permission bits do not bind root, so as root the child drops to the `nobody` user first.
std::vector<std::string> as_unprivileged(std::vector<std::string> argv) {
  if (geteuid() != 0) return argv;
  std::string line = "exec setpriv --reuid=65534 --regid=65534 --clear-groups";
  for (const std::string& a : argv)
    line += " '" + a + "'";
  return {"/bin/sh", "-c", line};
}

TEST_F(CliHostileInput, ReadOnlyFileAndDirectory) {
  if (geteuid() == 0 && run_process({"/bin/sh", "-c", "command -v setpriv"}).exit_code != 0) {
    GTEST_SKIP() << "running as root, and setpriv (util-linux) is missing to drop to nobody; "
                    "root ignores permission bits";
  }
  // The folder readable by others, so that `nobody` can reach the files in it.
  chmod(dir_.path().c_str(), 0755);
  chmod(db_.c_str(), 0444);
  const std::string before = read_file(db_);
  auto run = run_process(as_unprivileged(with_binary(tiny_run(db_))));
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find("cannot write database"), std::string::npos) << run.err;
  EXPECT_TRUE(read_file(db_) == before);

  const std::string locked_dir = dir_ / "readonly";
  ASSERT_EQ(mkdir(locked_dir.c_str(), 0555), 0);
  run = run_process(as_unprivileged(with_binary(tiny_run(locked_dir + "/new.db"))));
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find("is not writable"), std::string::npos) << run.err;
  EXPECT_FALSE(testing::exists(locked_dir + "/new.db"));
  chmod(db_.c_str(), 0644);
}

// A full disk, made with a file-size limit on the child (an unprivileged test cannot mount a
// small file system): SIGXFSZ ignored, so a write past the limit fails as ENOSPC/EFBIG does.
// The run stops with one error line (after its progress lines), exit 2; the earlier sweep and
// every step this run committed before the disk filled stay, and the file passes the check.
TEST_F(CliHostileInput, FullDisk) {
  const std::string steps_before = query_text(db_, "SELECT count(*) FROM steps WHERE run_id = 1");
  struct stat st {};
  ASSERT_EQ(stat(db_.c_str(), &st), 0);
  const int64_t limit_kib = st.st_size / 1024 + 48;
  std::string line = "trap '' XFSZ; ulimit -f " + std::to_string(limit_kib) + "; exec";
  for (const std::string& a :
       std::vector<std::string>{LPBENCH_BINARY, "run", "--steps", "100000", "--device", "cpu",
                                "--seq-len", "8", "--recipes", "bf16", "--db", db_})
    line += " '" + a + "'";
  const auto run = run_process({"/bin/sh", "-c", line});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_EQ(last_line(run.err).rfind("lpbench: error: cannot write database", 0), 0U) << run.err;
  EXPECT_NE(last_line(run.err).find("the disk may be full"), std::string::npos) << run.err;
  EXPECT_EQ(query_text(db_, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(query_text(db_, "SELECT count(*) FROM steps WHERE run_id = 1"), steps_before);
  const std::string kept = query_text(db_, "SELECT count(*) FROM steps WHERE run_id = 2");
  EXPECT_EQ(query_text(db_, "SELECT count(DISTINCT step) FROM steps WHERE run_id = 2"), kept);
  EXPECT_EQ(query_text(db_, "SELECT coalesce(max(step) + 1, 0) FROM steps WHERE run_id = 2"), kept);
  const auto report = run_process({LPBENCH_BINARY, "report", "--db", db_});
  EXPECT_EQ(report.exit_code, 0) << report.err;
}

TEST_F(CliHostileInput, MalformedConfigJson) {
  const std::string valid_head =
      R"("model_type": "llama", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128,)"
      R"( "num_attention_heads": 4)";
  const std::vector<std::pair<std::string, std::string>> configs{
      {"", "is not valid JSON"},
      {"{ \"model_type\": \"llama\", ", "is not valid JSON"},
      {"[1, 2, 3]", "holds one JSON object"},
      {"{\"hidden_size\": 64}", "neither 'model_type' nor 'architectures'"},
      {R"({"model_type": "gpt2"})", "unsupported architecture 'gpt2'"},
      {"{" + valid_head + "}", "field 'num_hidden_layers' is missing"},
      {"{" + valid_head + R"(, "num_hidden_layers": "two"})", "must be an integer"},
      {"{" + valid_head + R"(, "num_hidden_layers": 2.5})", "must be an integer"},
      {"{" + valid_head + R"(, "num_hidden_layers": -2})", "must be positive"},
      {"{" + valid_head + R"(, "num_hidden_layers": 0})", "must be positive"},
      {"{" + valid_head + R"(, "num_hidden_layers": 9223372036854775807})", "at most"},
      {"{" + valid_head + R"(, "num_hidden_layers": 18446744073709551615})", "must be positive"},
      {"{" + valid_head + R"(, "num_hidden_layers": 1e400})", "not valid JSON"},
      {"{" + valid_head + R"(, "num_hidden_layers": 2, "num_key_value_heads": 3})",
       "not a multiple"},
      {"{" + valid_head + R"(, "num_hidden_layers": 2, "rms_norm_eps": -1})", "must be positive"},
      {"{" + valid_head + R"(, "num_hidden_layers": 2, "rope_scaling": {"type": "yarn"}})",
       "unsupported rope_scaling"},
      {R"({"model_type": "llama", "vocab_size": 512, "hidden_size": 1099511627776, )"
       R"("intermediate_size": 1099511627776, "num_attention_heads": 4, )"
       R"("num_hidden_layers": 4096})",
       "at most"},
  };
  int index = 0;
  for (const auto& [text, expected] : configs) {
    const std::string path = dir_ / ("config" + std::to_string(index++) + ".json");
    write_file(path, text);
    expect_run_rejected("config.json " + text, {"--model", path}, expected);
  }
  write_file(dir_ / "binary.json", std::string("\x00\xff\xfe{\x01", 5));
  expect_run_rejected("binary config.json", {"--model", dir_ / "binary.json"}, "not valid JSON");
}

void write_tokens(const std::string& path, const std::vector<uint16_t>& ids) {
  write_file(path, std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * 2));
}

TEST_F(CliHostileInput, MalformedTokenFiles) {
  std::vector<uint16_t> good(4000);
  for (size_t i = 0; i < good.size(); ++i)
    good[i] = static_cast<uint16_t>(i % 500);
  const std::string odd = dir_ / "odd.bin";
  write_tokens(odd, good);
  write_file(odd, read_file(odd) + "x");  // 8001 bytes: not whole uint16 tokens
  expect_run_rejected("odd byte count", {"--data", odd}, "not a positive multiple of 2");
  expect_run_rejected("not whole uint32 tokens", {"--data", odd, "--token-dtype", "uint32"},
                      "not a positive multiple of 4");
  write_file(dir_ / "empty.bin", "");
  expect_run_rejected("empty token file", {"--data", dir_ / "empty.bin"}, "0 bytes");
  std::vector<uint16_t> outside = good;
  outside[1234] = 60000;  // tiny's vocabulary is 512
  write_tokens(dir_ / "oov.bin", outside);
  expect_run_rejected("out-of-vocabulary id", {"--data", dir_ / "oov.bin"},
                      "holds id 60000 at position 1234, outside the model's vocabulary of 512");
  write_tokens(dir_ / "short.bin", {1, 2, 3, 4, 5, 6});
  expect_run_rejected("too few tokens", {"--data", dir_ / "short.bin"}, "too few");
  expect_run_rejected("unknown dtype", {"--data", dir_ / "short.bin", "--token-dtype", "int8"},
                      "unknown token dtype");

  // A prepared directory whose meta.json is broken or lies.
  const std::string prepared = dir_ / "prepared";
  ASSERT_EQ(mkdir(prepared.c_str(), 0755), 0);
  write_tokens(prepared + "/tokens.bin", good);
  const std::vector<std::pair<std::string, std::string>> metas{
      {"{ nope", "not a valid lpbench data description"},
      {R"({"tokens": "tokens.bin", "dtype": "uint16"})", "not a valid lpbench data description"},
      {R"({"tokens": "tokens.bin", "dtype": "uint16", "vocab_size": "many"})",
       "not a valid lpbench data description"},
      {R"({"tokens": "missing.bin", "dtype": "uint16", "vocab_size": 500})",
       "cannot open token file"},
      {R"({"tokens": "tokens.bin", "dtype": "uint16", "vocab_size": 0})", "not between 1"},
      {R"({"tokens": "tokens.bin", "dtype": "uint16", "vocab_size": -5})", "vocab_size"},
  };
  for (const auto& [meta, expected] : metas) {
    write_file(prepared + "/meta.json", meta);
    expect_run_rejected("meta.json " + meta, {"--data", prepared}, expected);
  }
}

TEST_F(CliHostileInput, AbsurdSizes) {
  const std::string huge = "99999999999999999999999";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--micro-batch", "-1"}, "--micro-batch must be between 0 (the model's) and"},
      {{"--micro-batch", "16777217"}, "--micro-batch must be between"},
      {{"--micro-batch", huge}, "--micro-batch"},
      {{"--micro-batch", "4096", "--seq-len", "8192"}, "tokens per step exceeds"},
      {{"--seq-len", "-8"}, "--seq-len must be between 0 (the model's) and"},
      {{"--seq-len", "9223372036854775807"}, "--seq-len must be between"},
      {{"--seq-len", huge}, "--seq-len"},
      {{"--steps", "-1"}, "--steps must be between"},
      {{"--steps", "9223372036854775807"}, "--steps must be between"},
      {{"--steps", huge}, "--steps"},
      {{"--layers", "-1"}, "--layers must be between"},
      {{"--layers", "5"}, "--layers must be between 1 and 4"},
      {{"--layers", huge}, "--layers"},
      {{"--warmup-steps", "2"}, "--warmup-steps must be between"},
      {{"--eval-batches", "0"}, "--eval-batches must be between"},
      {{"--lr", "-0.1"}, "--lr must be a positive number (0: the model's)"},
      {{"--lr", "nan"}, "--lr"},
      {{"--lr", "inf"}, "--lr"},
      {{"--lr", "1e999"}, "--lr"},
      {{"--seed", "-1"}, "--seed"},
      {{"--no-interleave=" + huge}, "out of range"},  // a flag's value past long long (fuzz)
      {{"--workload", "gemm:0x64x64"}, "unknown model '0x64x64'"},
      {{"--workload", "gemm:-4x64x64"}, "unknown model '-4x64x64'"},
      {{"--workload", "gemm:9223372036854775807x2x2"}, "at most"},
      {{"--workload", "gemm:4294967296x4294967296x1"}, "at most"},
      {{"--workload", "model:llama2-7b", "--micro-batch", "65536"}, "tokens per step exceeds"},
      {{"--workload", "model:llama2-7b", "--micro-batch", "64"}, "needs about"},
  };
  for (const auto& [flags, expected] : cases) {
    std::string name;
    for (const std::string& f : flags)
      name += f + " ";
    expect_run_rejected(name, flags, expected);
  }
}

}  // namespace
}  // namespace lpbench
