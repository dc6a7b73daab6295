#!/usr/bin/env python3
"""scripts/ncu-stalls on a small CSV shaped like Nsight Compute's exported source page: the
samples by stall reason and the top instructions for each kernel, a kernel's block printed once
when ncu repeats it, and one clear error for a CSV without samples.

  ncu_stalls_test.py REPO_ROOT
"""
import os
import subprocess
import sys
import tempfile

HEADER = ('"Address","Source","Warp Stall Sampling (All Samples)",'
          '"Warp Stall Sampling (Not-issued Samples)","stall_barrier","stall_long_sb",'
          '"stall_barrier (Not Issued)"')


def block(name, rows):
    lines = [f'"Kernel Name","{name}",', HEADER]
    for address, source, samples, barrier, long_sb in rows:
        lines.append(f'"{address}","  {source}","{samples}","{samples}","{barrier}","{long_sb}","0"')
    return lines


def main():
    script = os.path.join(sys.argv[1], "scripts", "ncu-stalls")
    gemm = block("gemm_kernel", [("0x10", "BAR.SYNC 0x3", 60, 60, 0),
                                 ("0x20", "IGMMA.64x128x32", 30, 0, 30),
                                 ("0x30", "STG.E [R2], R4", 10, 0, 10)])
    other = block("other_kernel", [("0x10", "LDG.E R4, [R2]", 5, 0, 5)])
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "src.csv")
        with open(path, "w") as f:
            f.write("\n".join(gemm + gemm + other) + "\n")  # ncu repeats a kernel's block
        run = subprocess.run([sys.executable, script, path, "--top", "2"], capture_output=True, text=True)
        out = run.stdout
        if run.returncode != 0:
            failures.append(f"exit {run.returncode}: {run.stderr}")
        for line in ["100 samples: barrier 60.0 %, long_sb 40.0 %",
                     "60.0 %  BAR.SYNC 0x3", "30.0 %  IGMMA.64x128x32",
                     "5 samples: long_sb 100.0 %"]:
            if line not in out:
                failures.append(f"missing {line!r}")
        if out.count("gemm_kernel") != 1:
            failures.append("the repeated block printed more than once")
        if "STG.E" in out:
            failures.append("--top 2 printed a third instruction")
        if "[barrier]" not in out or "[long_sb]" not in out:
            failures.append("dominant reasons missing")
        empty = os.path.join(tmp, "empty.csv")
        with open(empty, "w") as f:
            f.write("\n".join(block("k", [("0x10", "NOP", 0, 0, 0)])) + "\n")
        run = subprocess.run([sys.executable, script, empty], capture_output=True, text=True)
        if run.returncode == 0 or "no warp-state samples" not in run.stderr:
            failures.append(f"an empty profile: exit {run.returncode}, {run.stderr!r}")
    if failures:
        print("\n".join(failures))
        print(out)
        return 1
    print("ncu-stalls: reasons, top instructions and errors as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
