#!/usr/bin/env python3
"""scripts/memory-snapshot on a small synthetic snapshot in torch's format: the state before the
history found by walking back from the snapshot's segments, the allocated peak, a retry (the
allocator released cache, then served the request that had not fit) with what was live by region
at it, and one clear line and exit 2 for a file that is not a snapshot or holds no history.

  memory_snapshot_test.py REPO_ROOT
"""
import os
import pickle
import subprocess
import sys
import tempfile

G = 2**30
BASE = 0x7F0000000000


def entry(action, addr, size, context=None):
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 0, "frames": []}
    if context:
        e["compile_context"] = context
    return e


def block(size, state):
    return {"size": size, "requested_size": size, "state": state, "frames": []}


def run(script, *args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


def main():
    script = os.path.join(sys.argv[1], "scripts", "memory-snapshot")
    # Before the history: 4 GiB live (weights), 8 GiB reserved. In the step: X (2 GiB) and Y
    # (1 GiB) allocated, X freed; Z (3 GiB) does not fit, 2 GiB of cache is released and 4 GiB
    # mapped, Z is served and freed. At the snapshot: the weights and Y live, 10 GiB reserved.
    trace = [
        entry("alloc", BASE + 4 * G, 2 * G, "norm layers.0"),
        entry("alloc", BASE + 6 * G, 1 * G, "quantize layers.0 x"),
        entry("free_requested", BASE + 4 * G, 2 * G, "norm layers.0"),
        entry("free_completed", BASE + 4 * G, 2 * G, "norm layers.0"),
        entry("segment_unmap", BASE + 8 * G, 2 * G, "gemm layers.0 dgrad"),
        entry("segment_map", BASE + 8 * G, 4 * G, "gemm layers.0 dgrad"),
        entry("alloc", BASE + 7 * G, 3 * G, "gemm layers.0 dgrad"),
        entry("free_requested", BASE + 7 * G, 3 * G),
        entry("free_completed", BASE + 7 * G, 3 * G),
    ]
    segment = {"address": BASE, "total_size": 10 * G, "stream": 0, "segment_type": "large",
               "blocks": [block(4 * G, "active_allocated"), block(2 * G, "inactive"),
                          block(1 * G, "active_allocated"), block(3 * G, "inactive")]}
    snapshot = {"segments": [segment], "device_traces": [trace]}
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "step.memory.pickle")
        with open(path, "wb") as f:
            pickle.dump(snapshot, f)
        result = run(script, path)
        out = result.stdout
        if result.returncode != 0:
            failures.append(f"exit {result.returncode}: {result.stderr}")
        want = [
            "1 retry in the step",
            "allocated peak: 8.00 GiB allocated, 10.00 GiB reserved (2.00 GiB cached beside it)",
            "retry: 3072.0 MiB asked in 'gemm layers.0 dgrad' with 5.00 GiB allocated and "
            "8.00 GiB reserved; the allocator released 2.00 GiB of cache and tried again",
        ]
        for line in want:
            if line not in out:
                failures.append(f"missing: {line!r}")
        # What was live at the retry: the weights from before the step, and Y.
        retry = out[out.find("retry:"):]
        live = [l.split() for l in retry.splitlines()[2:4]]
        if live != [["4.00", "GiB", "1", "before", "the", "step"],
                    ["1.00", "GiB", "1", "quantize", "layers.0", "x"]]:
            failures.append(f"live by region at the retry wrong: {live}")

        garbage = os.path.join(tmp, "garbage.pickle")
        with open(garbage, "wb") as f:
            f.write(b"not a pickle")
        empty = os.path.join(tmp, "empty.pickle")
        with open(empty, "wb") as f:
            pickle.dump({"segments": [], "device_traces": [[]]}, f)
        for name, bad, says in [("garbage", garbage, "memory-snapshot: "),
                                ("no history", empty, "holds no history"),
                                ("absent", os.path.join(tmp, "absent"), "No such file")]:
            r = run(script, bad)
            if r.returncode != 2 or says not in r.stderr or r.stderr.count("\n") != 1:
                failures.append(f"{name}: exit {r.returncode}, {r.stderr!r}")
    if failures:
        print("\n".join(failures))
        print(out)
        return 1
    print("memory-snapshot: peak, retry and live regions as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
