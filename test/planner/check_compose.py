#!/usr/bin/env python3
"""shardc plan's composition of pipelines (issue 18) against their m-copy
steps.

A 1F1B candidate of --compose-from or more micro-batches is screened from its
steps with two and three micro-batches (composeMicroBatches in
compiler/planner), and so is an interleaved one of more than three stages
(two and three micro-batches run as one partial group); with
`--compose-from 0` the same candidate is screened with its m copies
compiled. The two plans of one model must agree on every composed candidate:
  - collective bytes per mesh axis and in total: equal (to a byte),
  - the modelled step time and compute: equal (to 1e-9 relative),
  - the planned memory: within --memory-tolerance (the composed workspace is
    approximate: a stage's grows per micro-batch it holds at once),
and rank the same candidates (the finalists are compiled in full either way);
and the planner's bound for a pipeline at more micro-batches, taken from the
same candidate at fewer, is at most the step it bounds on every such pair.

With --stages, the same for pipelines of more stages screened from their
first, two middle and last stages (four compiled; the links priced on the
candidate's mesh) against the same
candidates with every stage compiled (`--no-stage-reduction`): bytes and
time equal, memory within --memory-tolerance (each compiled stage runs the
order of the long pipeline's stage it stands for, so it holds what that
stage holds: 0.00% on GPT-2 tiny's 46), the communication floors equal, the
same ranking.

usage: check_compose.py SHARDC --preset gpt2-124m --devices 8 --global-batch 32
       check_compose.py SHARDC --preset gpt2-tiny --layers 16 --devices 64 --global-batch 64 --stages
"""
import json
import os
import sys
import tempfile

# The same runner (a failing command fails the check) and arguments.
from check_plan import plan_arguments, run


def key(c):
    return (c["mesh"], c["strategy"], c["micro_batches"], c["schedule"], c["recompute"],
            c["offload_activations"])


def main():
    ap = plan_arguments()
    ap.add_argument("--memory-tolerance", type=float, default=0.10)
    ap.add_argument("--min-composed", type=int, default=1)
    ap.add_argument("--min-interleaved", type=int, default=0,
                    help="interleaved candidates that must be among those compared")
    ap.add_argument("--compose-from", type=int, default=8)
    # Enough ranked rows that the bounds (the (2 x top)-th best step) leave
    # the pipelines of many micro-batches evaluated.
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--layers", type=int, help="generate the preset with this many layers")
    ap.add_argument("--stages", action="store_true",
                    help="check the stage reduction instead of the composition")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "model.mlir")
        gen = [a.shardc, "gen", "--preset", a.preset, "--batch", str(a.global_batch), "-o", model]
        run(gen + (["--layers", str(a.layers)] if a.layers else []))
        cmd = [a.shardc, "plan", model, "--devices", str(a.devices), "--top", str(a.top), "--json"]
        if a.stages:
            composed = json.loads(run(cmd))
            exact = json.loads(run(cmd + ["--no-stage-reduction"]))
        else:
            composed = json.loads(run(cmd + ["--compose-from", str(a.compose_from)]))
            exact = json.loads(run(cmd + ["--compose-from", "0"]))
    n = composed["composed_pipelines"]
    if n < a.min_composed:
        sys.exit(f"FAIL: {n} candidates composed, expected at least {a.min_composed}")
    if not a.stages and exact["composed_pipelines"] != 0:
        sys.exit("FAIL: --compose-from 0 composed candidates")

    def pp_of(c):
        return int(c["mesh"].split(",")[0][3:]) if c["mesh"].startswith("pp=") else 1

    def reduced(c):
        """Whether the default plan screened `c` from fewer stages."""
        pp = pp_of(c)
        if c["recompute"] != "none" or c["offload_activations"]:
            return False
        return pp > 4 and c["schedule"] in ("1f1b", "interleaved") and c["micro_batches"] % (
            pp if c["schedule"] == "interleaved" else 1) == 0

    if a.stages:
        floors = {(f["mesh"], f["strategy"], f["micro_batch_size"]): f["seconds"]
                  for f in exact.get("floors", [])}
        same = 0
        for f in composed.get("floors", []):
            g = floors.get((f["mesh"], f["strategy"], f["micro_batch_size"]))
            if g is not None:
                if abs(f["seconds"] - g) > 1e-9 * max(g, 1e-12):
                    sys.exit(f"FAIL: floor of {f['mesh']} {f['strategy']}: {f['seconds']} from "
                             f"four stages, {g} from all")
                same += 1
        print(f"communication floors equal from four stages and from all: {same}")
    by_key = {key(c): c for c in exact["evaluated"]}
    checked, interleaved, worst = 0, 0, 0.0
    for c in composed["evaluated"]:
        if "prediction" not in c:
            continue
        if a.stages and not reduced(c):
            continue
        if not a.stages and (c["schedule"] not in ("1f1b", "interleaved") or
                             c["micro_batches"] < a.compose_from or
                             (c["schedule"] == "interleaved" and pp_of(c) <= 3)):
            continue
        e = by_key.get(key(c))
        if e is None or "prediction" not in e:
            sys.exit(f"FAIL: {c['flags']} evaluated composed but not exactly")
        # The screening figures (what the full compile of a finalist replaces).
        p = c.get("extrapolated", c["prediction"])
        q = e.get("extrapolated", e["prediction"])
        label = " ".join(c["flags"])
        for axes in set(p["bytes_per_axis"]) | set(q["bytes_per_axis"]):
            x, y = p["bytes_per_axis"].get(axes, 0), q["bytes_per_axis"].get(axes, 0)
            if abs(x - y) > 1:
                sys.exit(f"FAIL: {label}: bytes over {axes} composed {x} vs {y}")
        if abs(p["communication_bytes"] - q["communication_bytes"]) > 1:
            sys.exit(f"FAIL: {label}: bytes composed {p['communication_bytes']} vs "
                     f"{q['communication_bytes']}")
        for k in ("step_seconds", "compute_seconds", "exposed_communication_seconds", "bubble"):
            if abs(p[k] - q[k]) > 1e-9 * max(1.0, abs(q[k])):
                sys.exit(f"FAIL: {label}: {k} composed {p[k]} vs {q[k]}")
        mem, want = p["memory_bytes"]["total"], q["memory_bytes"]["total"]
        err = abs(mem - want) / want
        worst = max(worst, err)
        if err > a.memory_tolerance:
            sys.exit(f"FAIL: {label}: memory composed {mem} vs {want} ({err:.2%})")
        checked += 1
        interleaved += c["schedule"] == "interleaved"
        print(f"ok {label}: {p['step_seconds'] * 1e3:.3f} ms, "
              f"{round(p['communication_bytes'])} bytes, memory {(mem - want) / want:+.2%}")
    if checked < a.min_composed:
        sys.exit(f"FAIL: {checked} {'reduced' if a.stages else 'composed'} candidates compared")
    if interleaved < a.min_interleaved:
        sys.exit(f"FAIL: {interleaved} interleaved candidates compared, expected at least "
                 f"{a.min_interleaved}")
    # The planner's bound for a pipeline at more micro-batches from the same
    # candidate at fewer (what it skips candidates by): never above the step
    # it bounds.
    screen = {key(c): c.get("extrapolated", c["prediction"])
              for c in exact["evaluated"] if "prediction" in c}
    bounds = 0
    for k, q in screen.items():
        if not k[0].startswith("pp="):
            continue
        for k2, q2 in screen.items():
            if k2[:2] == k[:2] and k2[3:] == k[3:] and k2[2] > k[2]:
                b = 0.99 * (q["exposed_communication_seconds"] +
                            q["compute_seconds"] * (1 - q["bubble"]) / (1 - q2["bubble"]))
                if b > q2["step_seconds"] * (1 + 1e-12):
                    sys.exit(f"FAIL: the micro-batch bound from {k} ({b}) exceeds the step of "
                             f"{k2} ({q2['step_seconds']})")
                bounds += 1
    if bounds < 1:
        sys.exit("FAIL: no pipeline evaluated at two micro-batch counts")
    print(f"the micro-batch bound holds on {bounds} pairs")
    if [key(c) for c in composed["ranked"]] != [key(c) for c in exact["ranked"]]:
        sys.exit("FAIL: the composed and the exact screening rank differently")
    what = ("candidates from four stages equal in bytes and time to every stage compiled"
            if a.stages else "composed candidates equal in bytes and time to their m-copy steps")
    print(f"{a.preset} on {a.devices} devices, global batch {a.global_batch}: {checked} {what}, "
          f"memory within {worst:.2%}")


if __name__ == "__main__":
    main()
