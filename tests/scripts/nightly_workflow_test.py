#!/usr/bin/env python3
"""The CI template (scripts/nightly.d/github-actions.yml) on the CPU: its YAML is read by a
parser, its structure checked, and its steps run in order on a fresh clone, night after night,
with the actions it uses played by local equivalents (checkout: a fresh git clone; cache
restore/save: a folder of keyed copies; upload-artifact: a copy). Five nights: two of a tiny
CPU suite (the database must come back from the cache, the second night must see the first),
two whose suite does not check out (a bad run line, a line that is no command: the nightly step
fails with exit 2 before anything runs, the verdict names the line, the report and the database
are still kept, and the database is unchanged), and one on a runner without gnuplot.

    nightly_workflow_test.py REPOSITORY_ROOT LPBENCH_BINARY
"""
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import yaml

ROOT, LPBENCH = sys.argv[1], os.path.abspath(sys.argv[2])
TEMPLATE = os.path.join(ROOT, "scripts/nightly.d/github-actions.yml")
failures = []


def check(what, ok, detail=""):
    print(("ok: " if ok else "FAIL: ") + what + ("" if ok else f" ({detail})"))
    if not ok:
        failures.append(what)


with open(TEMPLATE) as f:
    workflow = yaml.safe_load(f)

# --- structure -----------------------------------------------------------------------------
# PyYAML reads the key `on` as the boolean True (YAML 1.1); GitHub reads it as "on".
triggers = workflow.get("on", workflow.get(True))
check("the workflow runs on a schedule", isinstance(triggers, dict) and "schedule" in triggers,
      str(triggers))
jobs = workflow.get("jobs", {})
check("the workflow has one job", len(jobs) == 1, str(list(jobs)))
job = next(iter(jobs.values()))
runs_on = job.get("runs-on", [])
check("the job runs on a self-hosted GPU runner",
      "self-hosted" in runs_on and "gpu" in runs_on, str(runs_on))
check("one night at a time", workflow.get("concurrency", {}).get("cancel-in-progress") is False)
steps = job["steps"]
kinds = [s.get("uses", "run").split("@")[0] for s in steps]
expected = ["actions/checkout", "actions/cache/restore", "run", "run",
            "actions/upload-artifact", "actions/cache/save"]
check("the steps: checkout, restore the database, setup, nightly, publish, keep the database",
      kinds == expected, str(kinds))
for s in steps[4:]:
    check(f"'{s['name']}' runs after a failed night too", s.get("if") == "always()", s.get("if"))
restore, save = steps[1]["with"], steps[5]["with"]
check("the database is saved where it is restored from", restore["path"] == save["path"])
check("the saved key is one the next night's restore finds",
      any(save["key"].startswith(k.strip()) for k in restore["restore-keys"].splitlines()
          if k.strip()), save["key"])
env = job.get("env", {})
check("the database lives in the cached folder",
      os.path.dirname(env.get("NIGHTLY_DB", "")) == restore["path"], env.get("NIGHTLY_DB"))
check("the report folder is published", steps[4]["with"]["path"].rstrip("/") == "nightly-report")
check("the nightly step runs scripts/nightly", "scripts/nightly" in steps[3]["run"])

if failures:
    sys.exit(f"{len(failures)} check(s) failed")

# --- the steps, night after night ---------------------------------------------------------------
work = tempfile.mkdtemp()
cache = os.path.join(work, "cache")
os.makedirs(cache)
suites = os.path.join(work, "suites")
os.makedirs(suites)
tiny = os.path.join(suites, "tiny.suite")
with open(tiny, "w") as f:
    f.write("# a night in seconds\n"
            "run --workload model:tiny --recipes bf16,int8-tensor --steps 12 --seq-len 16 "
            "--micro-batch 2 --device cpu --seed 0\n"
            "gemm --models tiny --tokens 32 --recipes bf16,int8-tensor --ops gemm "
            "--variants with_quantization --device cpu --iterations 5 --warmup 1\n")
broken = os.path.join(suites, "broken.suite")
with open(broken, "w") as f:
    f.write("run --workload model:tiny --recipes bf16 --steps 12 --device cpu\n"
            "run --workload model:nope --steps 12 --device cpu\n")
unknown = os.path.join(suites, "unknown.suite")
with open(unknown, "w") as f:
    f.write("bench --workload model:tiny\n")


def expand(text, night, suite):
    values = {"vars.LPBENCH_NIGHTLY_SUITE": suite, "runner.name": "test-runner",
              "github.run_id": str(1000 + night)}

    def one(match):
        name = match.group(1).strip()
        if name not in values:
            raise SystemExit(f"FAIL: the template uses ${{{{ {name} }}}}, which this test "
                             "cannot play")
        return values[name]
    return re.sub(r"\$\{\{([^}]*)\}\}", one, text)


def night(number, suite, path=None):
    """Runs the job's steps in order; returns (exit code of each step, the artifact folder)."""
    clone = os.path.join(work, f"night{number}")
    artifacts = os.path.join(work, f"artifacts{number}")
    environment = dict(os.environ)
    environment.update({k: expand(str(v), number, suite) for k, v in env.items()})
    environment["LPBENCH_BIN"] = LPBENCH  # built once, not on every night of the test
    # A runner with torch installed already: setup finds it rather than downloading it again.
    venv_python = os.path.join(ROOT, ".venv/bin/python3")
    if os.path.exists(venv_python):
        environment.setdefault("LPBENCH_PYTHON", venv_python)
    if path:
        environment["PATH"] = path
    codes = []
    failed = False
    for s in steps:
        if failed and s.get("if") != "always()":
            codes.append(None)
            continue
        uses = s.get("uses", "").split("@")[0]
        w = {k: expand(str(v), number, suite) for k, v in s.get("with", {}).items()}
        rc = 0
        if uses == "actions/checkout":
            rc = subprocess.call(["git", "clone", "--quiet", ROOT, clone])
        elif uses == "actions/cache/restore":
            keys = [w["key"]] + [k.strip() for k in w.get("restore-keys", "").splitlines()]
            entries = sorted(os.listdir(cache), key=lambda e: os.path.getmtime(
                os.path.join(cache, e)), reverse=True)
            for key in keys:
                hit = [e for e in entries if e == key] or [e for e in entries if e.startswith(key)]
                if key and hit:
                    shutil.copytree(os.path.join(cache, hit[0]), os.path.join(clone, w["path"]))
                    break
        elif uses == "actions/cache/save":
            source = os.path.join(clone, w["path"])
            target = os.path.join(cache, w["key"])
            rc = 1 if os.path.exists(target) or not os.path.isdir(source) else 0
            if rc == 0:
                shutil.copytree(source, target)
        elif uses == "actions/upload-artifact":
            source = os.path.join(clone, w["path"])
            rc = 0 if os.path.isdir(source) else 1
            if rc == 0:
                shutil.copytree(source, os.path.join(artifacts, w["name"]))
        elif "run" in s:
            rc = subprocess.call(["bash", "-eo", "pipefail", "-c", s["run"]], cwd=clone,
                                 env=environment)
        else:
            raise SystemExit(f"FAIL: the template uses {uses}, which this test cannot play")
        codes.append(rc)
        failed = failed or rc != 0
    return codes, os.path.join(artifacts, "lpbench-nightly-report")


def nightly_sweeps(number):
    """Nightly sweeps in the database the given night saved to the cache."""
    path = os.path.join(cache, f"lpbench-nightly-db-test-runner-{1000 + number}",
                        os.path.basename(env["NIGHTLY_DB"]))
    if not os.path.exists(path):
        return None
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM sweeps WHERE label = 'nightly'").fetchone()[0]


codes, report = night(1, tiny)
check("night 1: every step ends 0 (not enough nights is a warning)", codes == [0] * 6, str(codes))
for name in ["compare.md", "compare.xml", "report.html", "timings.txt"]:
    check(f"night 1 publishes {name}", os.path.exists(os.path.join(report, name)))
check("night 1 keeps its two sweeps", nightly_sweeps(1) == 2, str(nightly_sweeps(1)))

codes, report = night(2, tiny)
check("night 2: every step ends 0", codes == [0] * 6, str(codes))
check("night 2 restored night 1's database and added its own", nightly_sweeps(2) == 4,
      str(nightly_sweeps(2)))
with open(os.path.join(report, "compare.md")) as f:
    text = f.read()
check("night 2 is compared with night 1 (runs and kernel cases)",
      "baseline run" in text and "baseline kernel result" in text, text[:400])

codes, report = night(3, broken)
check("night 3: a suite line that does not parse fails the nightly step with exit 2",
      codes[3] == 2, str(codes))
check("night 3 still publishes and keeps the database", codes[4] == 0 and codes[5] == 0,
      str(codes))
check("night 3 ran nothing: the database is as night 2 left it", nightly_sweeps(3) == 4,
      str(nightly_sweeps(3)))
with open(os.path.join(report, "compare.md")) as f:
    text = f.read()
check("night 3's published verdict names the line and the problem",
      "broken.suite:2" in text and "nope" in text, text)

codes, report = night(4, unknown)
check("night 4: a line that is no suite command fails with exit 2", codes[3] == 2, str(codes))
check("night 4 ran nothing", nightly_sweeps(4) == 4, str(nightly_sweeps(4)))

# A runner without gnuplot: the night still publishes its tables (report.md) and is not broken.
no_gnuplot = os.path.join(work, "bin-without-gnuplot")
os.makedirs(no_gnuplot)
for folder in os.environ["PATH"].split(os.pathsep):
    if not os.path.isdir(folder):
        continue
    for name in os.listdir(folder):
        target = os.path.join(no_gnuplot, name)
        if not name.startswith("gnuplot") and not os.path.lexists(target):
            os.symlink(os.path.join(folder, name), target)
codes, report = night(5, tiny, path=no_gnuplot)
check("night 5 without gnuplot: every step ends 0", codes == [0] * 6, str(codes))
check("night 5 publishes its tables without charts",
      os.path.exists(os.path.join(report, "report.md"))
      and not os.path.exists(os.path.join(report, "report.html")))

shutil.rmtree(work, ignore_errors=True)
if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("all checks passed")
