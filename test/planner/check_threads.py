#!/usr/bin/env python3
"""shardc plan on several threads (issue 18) makes the plan it makes on one.

The search decides in order, as it would alone; the other threads only compute
ahead what it is expected to ask for next (compiler/planner/Lookahead.h). So
`shardc plan --json` must be byte-identical for every --jobs: every evaluated
candidate with its figures, the counts (dominated, bounded, floors, composed),
the floors and the ranking. Each count runs --repeat times (the threads'
interleaving differs from run to run; the plan must not).

usage: check_threads.py SHARDC --preset gpt2-tiny --layers 16 --devices 64 --global-batch 64
"""
import os
import sys
import tempfile

from check_plan import plan_arguments, run


def main():
    ap = plan_arguments()
    ap.add_argument("--layers", type=int, help="generate the preset with this many layers")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--jobs", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model.mlir")
        gen = [a.shardc, "gen", "--preset", a.preset, "--batch", str(a.global_batch), "-o", model]
        run(gen + (["--layers", str(a.layers)] if a.layers else []))
        plans = {}
        for jobs in a.jobs.split(","):
            for r in range(a.repeat if jobs != "1" else 1):
                plans[(jobs, r)] = run([a.shardc, "plan", model, "--devices", str(a.devices),
                                        "--top", str(a.top), "--jobs", jobs, "--json"])
        reference = plans[("1", 0)]
        if '"ranked"' not in reference or len(reference) < 1000:
            sys.exit("FAIL: the one-thread plan has no ranking:\n" + reference[:2000])
        for k, p in plans.items():
            if p != reference:
                ref_lines, lines = reference.splitlines(), p.splitlines()
                first = next((i for i, (x, y) in enumerate(zip(ref_lines, lines)) if x != y),
                             min(len(ref_lines), len(lines)))
                sys.exit(f"FAIL: --jobs {k[0]} (run {k[1] + 1}) differs from --jobs 1 at line "
                         f"{first + 1}:\n  1: {ref_lines[first:first + 3]}\n  "
                         f"{k[0]}: {lines[first:first + 3]}")
        print(f"ok: {len(plans)} plans identical ({len(reference)} bytes of JSON), "
              f"--jobs {a.jobs}")


if __name__ == "__main__":
    main()
