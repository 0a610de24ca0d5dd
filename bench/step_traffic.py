#!/usr/bin/env python3
"""Static memory traffic of a compiled step (issue 22).

Reads the rt-level module `shardc compile ... --emit-mlir FILE` writes and sums,
over every `rt.kernel` call of `@shardc_step`, the bytes of the buffers it reads
(`ins`) and writes (`outs`): what a kernel moves at least once, before any FLOP.
Prints calls and bytes per callee and the total (and, with --bandwidth, the time
that traffic takes at that many bytes/s). Collectives and copies are listed
apart. Exact: no sampling, no timing.

  python3 bench/step_traffic.py step.mlir [--bandwidth 3.35e12] [--json]
"""
import argparse
import collections
import json
import re
import sys

DTYPE_BYTES = {"f64": 8, "f32": 4, "i32": 4, "bf16": 2, "f16": 2, "i64": 8, "i8": 1}
MEMREF = re.compile(r"memref<([^>]*)>")


def memref_bytes(text):
    total = 0
    for body in MEMREF.findall(text):
        parts = body.split("x")
        dtype = parts[-1].split(",")[0].strip()
        n = 1
        for p in parts[:-1]:
            n *= int(p)
        total += n * DTYPE_BYTES[dtype]
    return total


def step_body(text):
    start = text.find("func.func @shardc_step")
    if start < 0:
        sys.exit("no func.func @shardc_step in the input (use shardc compile --emit-mlir)")
    depth, i = 0, text.index("{", start)
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i:j]
    return text[i:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("module")
    ap.add_argument("--bandwidth", type=float, default=0.0, help="bytes/s (e.g. 3.35e12 for H100 HBM3)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    body = step_body(open(a.module).read())
    kernels = collections.defaultdict(lambda: [0, 0])
    other = collections.defaultdict(lambda: [0, 0])
    for line in body.splitlines():
        line = line.strip()
        m = re.search(r'rt\.kernel "([^"]+)"', line)
        if m:
            # ins(... : types) outs(... : types): the types after each colon;
            # a kernel's scratch(...) is working memory, not traffic.
            line = re.sub(r"scratch\([^)]*\)", "", line)
            types = " ".join(re.findall(r":\s*([^)]*)\)", line))
            k = kernels[m.group(1)]
            k[0] += 1
            k[1] += memref_bytes(types)
            continue
        m = re.search(r'rt\.(collective_start|collective|copy) "?([^" ]*)', line)
        if m:
            o = other[m.group(1) + (" " + m.group(2) if m.group(2) else "")]
            o[0] += 1
            o[1] += memref_bytes(line)
    calls = sum(v[0] for v in kernels.values())
    total = sum(v[1] for v in kernels.values())
    if a.json:
        print(json.dumps({"kernel_calls": calls, "kernel_bytes": total,
                          "per_callee": {k: {"calls": v[0], "bytes": v[1]} for k, v in kernels.items()},
                          "other": {k: {"calls": v[0], "bytes": v[1]} for k, v in other.items()}}))
        return
    print(f"{'callee':32} {'calls':>7} {'GB':>10}")
    for name, (n, b) in sorted(kernels.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:32} {n:7d} {b / 1e9:10.3f}")
    print(f"{'total kernels':32} {calls:7d} {total / 1e9:10.3f}")
    if a.bandwidth:
        print(f"at {a.bandwidth:.3g} B/s: {total / a.bandwidth * 1e3:.1f} ms of pure traffic")
    for name, (n, b) in sorted(other.items()):
        print(f"{name:32} {n:7d} {b / 1e9:10.3f}  (not kernels)")


if __name__ == "__main__":
    main()
