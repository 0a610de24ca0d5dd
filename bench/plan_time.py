#!/usr/bin/env python3
"""How long `shardc plan` takes, and how much memory (issue 18).

For each (preset, devices) pair this generates the model at a global batch of
one sequence per device (`shardc gen --preset P --batch N`), runs
`shardc plan m.mlir --devices N --global-batch N --top 3` under
/usr/bin/time, and prints the wall time, the peak RSS and the plan's own
counts (candidates evaluated, composed, dominated, bounded). With --vs OTHER
(another shardc binary) each plan also runs with that binary, side by side
(A B A B ... for --repeat > 1), and the table gives the ratio; the two plans'
top rows must agree (the script fails otherwise: a faster plan that chooses
differently is not the same plan).

usage: bench/plan_time.py [--shardc PATH] [--vs PATH] [--runs 124m:8,1.5b:512]
                          [--repeat 1] [--out FILE]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESETS = {"124m": "gpt2-124m", "355m": "gpt2-355m", "1.5b": "gpt2-1.5b"}


def timed_plan(shardc, model, devices, tmp):
    out = os.path.join(tmp, "plan.json")
    cmd = ["/usr/bin/time", "-f", "%e %M", shardc, "plan", model, "--devices", str(devices),
           "--global-batch", str(devices), "--top", "3", "--json", "-o", out]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}:\n{p.stderr[-2000:]}")
    seconds, kb = p.stderr.strip().splitlines()[-1].split()
    with open(out) as f:
        plan = json.load(f)
    top = [(c["mesh"], c["strategy"], c["micro_batches"], c["schedule"], c["recompute"])
           for c in plan["ranked"]]
    return float(seconds), int(kb) / 1e6, plan, top


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shardc", default=os.path.join(ROOT, "build", "tools", "shardc", "shardc"))
    ap.add_argument("--vs", help="another shardc binary, run side by side")
    ap.add_argument("--runs", default="124m:8,124m:64,1.5b:8,1.5b:64,1.5b:512")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", help="also write the table here")
    a = ap.parse_args()
    rows = ["| model | devices | plan (s) | peak RSS (GB) | evaluated | composed | dominated | "
            "bounded |" + (" other (s) | ratio |" if a.vs else ""),
            "|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if a.vs else "")]
    with tempfile.TemporaryDirectory() as tmp:
        for run in a.runs.split(","):
            key, devices = run.split(":")
            devices = int(devices)
            model = os.path.join(tmp, f"{key}-{devices}.mlir")
            subprocess.run([a.shardc, "gen", "--preset", PRESETS[key], "--batch", str(devices),
                            "-o", model], check=True)
            mine, other = [], []
            for _ in range(a.repeat):
                s, gb, plan, top = timed_plan(a.shardc, model, devices, tmp)
                mine.append(s)
                if a.vs:
                    s2, _, _, top2 = timed_plan(a.vs, model, devices, tmp)
                    other.append(s2)
                    if top2 != top:
                        sys.exit(f"FAIL: {key} on {devices}: the plans differ:\n{top}\n{top2}")
            best = min(mine)
            row = (f"| GPT-2 {key.upper()} | {devices} | {best:.1f} | {gb:.2f} | "
                   f"{len(plan['evaluated'])} | {plan.get('composed_pipelines', 0)} | "
                   f"{plan['dominated_not_evaluated']} | {plan['bounded_not_evaluated']} |")
            if a.vs:
                row += f" {min(other):.1f} | {min(other) / best:.2f} |"
            rows.append(row)
            sys.stderr.write(row + "\n")
    table = "\n".join(rows)
    print(table)
    if a.out:
        with open(a.out, "w") as f:
            f.write(f"# shardc plan time ({datetime.date.today().isoformat()}, "
                    f"bench/plan_time.py)\n\n{table}\n")


if __name__ == "__main__":
    main()
