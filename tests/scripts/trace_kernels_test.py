#!/usr/bin/env python3
"""scripts/trace-kernels on a small synthetic profiler trace: the kernel families (cuDNN's
attention kernels name wgmma, and must not count as lpbench's INT8 GEMM), the sums, and --gaps
(the span, the idle time, and the CPU operator that launched the kernel after each gap),
--against (a base trace named, or BF16's found in the store beside the trace), and
--timeline (each kernel's start, the idle time before it, its lead over its launch, its launcher).

  trace_kernels_test.py REPO_ROOT
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile


def kernel(name, ts, dur, corr):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"correlation": corr}}


def launch(ts, corr):
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 2, "tid": 7,
            "args": {"correlation": corr}}


def op(name, ts, dur):
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "tid": 7}


def run(script, *args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


def main():
    script = os.path.join(sys.argv[1], "scripts", "trace-kernels")
    events = [
        op("lpbench::quantize", 0, 20), launch(5, 1),
        kernel("quantize_tensorwise_kernel", 10, 100, 1),
        op("lpbench::int8_linear", 30, 200), op("lpbench::wgmma_gemm", 150, 30),
        # The host's 100 us between the two launches, 90 of them in one synchronize.
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "ts": 50, "dur": 90, "tid": 7},
        launch(160, 2),
        # 60 us with no kernel running: the GEMM's launch came late.
        kernel("void lpbench::cuda::wgmma_gemm_kernel<128, false>", 170, 300, 2),
        op("aten::scaled_dot_product_attention", 200, 50), launch(210, 3),
        kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", 470, 200, 3),
        op("aten::mm", 680, 10), launch(685, 4),
        # 20 us idle before the cuBLAS product.
        kernel("nvjet_tst_128x256", 690, 100, 4),
    ]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.trace.json")
        with open(path, "w") as f:
            json.dump({"traceEvents": events}, f)
        grouped = run(script, path, "--group", "--gaps", "5")
        out = grouped.stdout
        if grouped.returncode != 0:
            failures.append(f"exit {grouped.returncode}: {grouped.stderr}")
        expect = [
            "0.700 ms of kernels in 4 launches",
            "0.300  42.9%      1  gemm (wgmma int8)",
            "0.200  28.6%      1  attention",
            "0.100  14.3%      1  gemm (cuBLAS/cutlass)",
            "0.100  14.3%      1  quantize",
            "span 0.780 ms, no kernel running for 0.080 ms (10.3 %) in 2 gaps",
        ]
        for line in expect:
            if line not in out:
                failures.append(f"missing line {line!r}")
        lines = out.splitlines()
        gap_lines = [l for l in lines if "<-" in l and not l.strip().startswith("us")]
        if len(gap_lines) != 2:
            failures.append(f"expected 2 gap lines, got {gap_lines}")
        else:
            # Longest first, each naming the innermost CPU operator around the launch.
            if not ("60.0" in gap_lines[0] and "wgmma_gemm_kernel" in gap_lines[0]
                    and gap_lines[0].endswith("lpbench::wgmma_gemm")):
                failures.append(f"first gap line wrong: {gap_lines[0]!r}")
            if not ("20.0" in gap_lines[1] and gap_lines[1].endswith("aten::mm")):
                failures.append(f"second gap line wrong: {gap_lines[1]!r}")
            # Under the first gap: the host's time since its previous launch (ended at 7) and the
            # synchronize that took most of it.
            after = lines[lines.index(gap_lines[0]) + 1]
            if not ("host 153.0 us since its previous launch" in after
                    and "cudaStreamSynchronize 90.0" in after):
                failures.append(f"host line under the first gap wrong: {after!r}")
        # --timeline: every kernel in order, with its start, time, the idle GPU before it, its lead
        # (kernel start minus launch: how far ahead the host was) and its launcher.
        timeline = run(script, path, "--timeline").stdout.splitlines()
        rows = [l.split() for l in timeline if "<-" in l and not l.strip().startswith("start")]
        want = [["0.0", "100.0", "0.0", "5.0", "quantize:"],
                ["160.0", "300.0", "60.0", "10.0", "gemm", "(wgmma", "int8):"],
                ["460.0", "200.0", "0.0", "260.0", "attention:"],
                ["680.0", "100.0", "20.0", "5.0", "gemm", "(cuBLAS/cutlass):"]]
        if len(rows) != len(want) or any(r[:len(w)] != w for r, w in zip(rows, want)):
            failures.append(f"--timeline rows wrong: {rows}")
        elif not rows[1][-1] == "lpbench::wgmma_gemm":
            failures.append(f"--timeline launcher wrong: {rows[1]}")
        # A quantization that computes its input from a producer's (SwiGLU's output, here) is
        # counted apart from the quantization passes, since part of its time is the producer's.
        fused = os.path.join(tmp, "fused.trace.json")
        source = "(lpbench::cuda::(anonymous namespace)::Source)"
        with open(fused, "w") as f:
            json.dump({"traceEvents": [
                kernel(f"void quantize_tensorwise_kernel<true, true, true, true, {source}0>(p)", 0, 50, 1),
                kernel(f"void quantize_tensorwise_kernel<true, true, true, true, {source}1>(p)", 60, 30, 2),
                kernel("void quantize_swiglu_backward_kernel<true>(p)", 100, 40, 3),
                kernel("void lpbench::cuda::(anonymous namespace)::quantize_rope_backward_kernel<true>(p)",
                       150, 30, 4),
            ]}, f)
        families = run(script, fused, "--group").stdout
        for line in ["0.100  66.7%      3  quantize in a producer", "0.050  33.3%      1  quantize"]:
            if line not in families:
                failures.append(f"producer families: missing {line!r} in {families!r}")
        # --against: the fused trace (150 us, all outside the GEMMs and attention) over the first
        # trace, whose 100 us of quantization are all it has outside them.
        against = run(script, fused, "--group", "--against", path).stdout
        want = "outside the GEMMs and attention: 0.150 ms against the base's 0.100: +0.050 ms, 33.3 %"
        if want not in against:
            failures.append(f"--against: missing {want!r} in {against!r}")
        # --against bf16: the BF16 run's trace of the same step and sweep, found in the database
        # beside the traces (runs 1 and 2 in sweep 1; run 3 alone in sweep 2, with no BF16 run).
        db = os.path.join(tmp, "s.db")
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, sweep_id INTEGER, recipe TEXT)")
        con.executemany("INSERT INTO runs VALUES (?, ?, ?)",
                        [(1, 1, "bf16"), (2, 1, "int8-tensor"), (3, 2, "int8-tensor")])
        con.commit()
        con.close()
        for run_id, source in [(1, path), (2, fused), (3, fused)]:
            shutil.copy(source, os.path.join(tmp, f"s-run{run_id}-step8.trace.json"))
        twin = run(script, os.path.join(tmp, "s-run2-step8.trace.json"), "--group", "--against", "bf16")
        if twin.returncode != 0 or want not in twin.stdout:
            failures.append(f"--against bf16: exit {twin.returncode}, missing {want!r} in {twin.stdout!r}")
        itself = run(script, os.path.join(tmp, "s-run1-step8.trace.json"), "--group", "--against", "bf16")
        if itself.returncode != 0 or "outside the GEMMs" in itself.stdout:
            failures.append(f"--against bf16 on BF16's own trace: exit {itself.returncode}, {itself.stdout!r}")
        alone = run(script, os.path.join(tmp, "s-run3-step8.trace.json"), "--against", "bf16")
        if alone.returncode == 0 or "has no BF16 trace of step 8" not in alone.stderr or alone.stdout:
            failures.append(f"--against bf16 without a BF16 run: exit {alone.returncode}, {alone.stderr!r}")
        unnamed = run(script, path, "--against", "bf16")
        if unnamed.returncode == 0 or "--against bf16 needs a trace named" not in unnamed.stderr:
            failures.append(f"--against bf16 on an unnamed trace: exit {unnamed.returncode}, {unnamed.stderr!r}")
        missing = run(script, os.path.join(tmp, "absent.json"))
        if missing.returncode == 0 or "cannot read" not in missing.stderr:
            failures.append(f"an absent trace: exit {missing.returncode}, {missing.stderr!r}")
    if failures:
        print("\n".join(failures))
        print(out)
        return 1
    print("trace-kernels: families, sums, gaps and timeline as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
