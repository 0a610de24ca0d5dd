#!/usr/bin/env python3
"""Attention over tp when its heads do not divide it: the two layouts side by side.

For GPT-2 1.5B (25 heads) and GPT-2 124M (12 heads on tp=8), B=8, T=1024, runs
`shardc explain --json` with `--attention-rows whole` (heads gathered over tp,
attention replicated over tp), `split` (attention split by its query rows
offered everywhere) and `auto` (the default: propagated with and without, the
faster modelled step kept) and prints, per mesh, strategy and precision: the
modelled step, collective bytes per device, planned memory and activations
per device of whole and split, and which layout auto kept. Static figures from the compiler's cost model and
memory plan (hardware file h100-8x-nvlink-ib), not measurements.

usage: bench/attention_rows.py [--shardc build/tools/shardc/shardc] [--out FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = [
    ("gpt2-1.5b", "tp=8", ["tp", "tp+sp"]),
    ("gpt2-1.5b", "dp=4,tp=2", ["dp+tp", "dp+tp+sp", "zero1+tp"]),
    ("gpt2-1.5b", "dp=2,tp=4", ["dp+tp", "dp+tp+sp", "zero1+tp"]),
    ("gpt2-124m", "tp=8", ["tp", "tp+sp"]),
]


def explain(shardc, model, mesh, strategy, precision, rows):
    cmd = [shardc, "explain", model, "--mesh", mesh, "--strategy", strategy, "--precision",
           precision, "--attention-rows", rows, "--json"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit("FAILED: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardc", default=os.path.join(ROOT, "build", "tools", "shardc", "shardc"))
    ap.add_argument("--out", help="also write the table here")
    a = ap.parse_args()
    lines = ["| model | mesh | strategy | precision | whole: step ms / comm GB / memory GiB "
             "(activations) | split: the same | auto kept | step split / whole |",
             "|---|---|---|---|---|---|---|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for preset, mesh, strategies in RUNS:
            model = os.path.join(tmp, preset + ".mlir")
            if not os.path.exists(model):
                subprocess.run([a.shardc, "gen", "--preset", preset, "--batch", "8", "-o", model],
                               check=True)
            for strategy in strategies:
                for precision in ("fp32", "bf16"):
                    cells = []
                    reports = [explain(a.shardc, model, mesh, strategy, precision, rows)
                               for rows in ("whole", "split", "auto")]
                    for r in reports[:2]:
                        m = r["memory_bytes"]
                        cells.append("%.1f / %.2f / %.2f (%.2f)" % (
                            r["step_seconds"] * 1e3, r["communication_bytes"] / 1e9,
                            m["total"] / 2**30, m["activations"] / 2**30))
                    kept = "query rows" if reports[2].get("query_row_splits") else "heads gathered"
                    if not reports[1].get("query_row_splits"):
                        cells[1] = "(no op took it)"
                    line = "| %s | %s | %s | %s | %s | %s | %s | %.3f |" % (
                        preset, mesh, strategy, precision, cells[0], cells[1], kept,
                        reports[1]["step_seconds"] / reports[0]["step_seconds"])
                    print(line, flush=True)
                    lines.append(line)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    else:
        print("\n".join(lines))


if __name__ == "__main__":
    main()
