#!/usr/bin/env python3
"""Checks `shardc plan` against the compiler (issue 18's test).

For a model preset, a device count and a global batch: runs `shardc plan
--json`, then for every candidate it ranks (the printed top k) runs `shardc
explain --json` on the same model with the candidate's own flags (what
`shardc compile --plan` passes) and requires
  - planned memory per device within --memory-tolerance (5%) of the plan's,
  - collective bytes (per mesh axis and in total) equal to the plan's,
  - the modelled step time equal to the plan's (same cost model),
and, where the candidate was chosen by extrapolation (3 and 4 layers per
pipeline chunk), its extrapolated collective bytes and step time equal to the compiled
step's (they are affine in the layer count, the gradient buckets counted on
the extrapolated bytes; memory is only reported); and every communication
floor the planner bounded pipelines by at most the screened step of each
evaluated candidate it applies to.

usage: check_plan.py SHARDC --preset gpt2-124m --devices 8 --global-batch 8
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p.stdout


def plan_arguments():
    """The arguments every planner check takes: the binary and what to plan."""
    ap = argparse.ArgumentParser()
    ap.add_argument("shardc")
    ap.add_argument("--preset", required=True)
    ap.add_argument("--devices", type=int, required=True)
    ap.add_argument("--global-batch", type=int, required=True)
    return ap


def main():
    ap = plan_arguments()
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--hardware", default="h100-8x-nvlink-ib")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--memory", help="GiB per device")
    ap.add_argument("--memory-tolerance", type=float, default=0.05)
    ap.add_argument("--min-ranked", type=int, default=1)
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        def model_at(batch):
            """The model whose function's batch is one micro-batch."""
            path = os.path.join(tmp, f"model-b{batch}.mlir")
            if not os.path.exists(path):
                run([a.shardc, "gen", "--preset", a.preset, "--batch", str(batch), "-o", path])
            return path
        model = model_at(a.global_batch)
        plan_cmd = [a.shardc, "plan", model, "--devices", str(a.devices), "--hardware", a.hardware,
                    "--precision", a.precision, "--top", str(a.top), "--json"]
        if a.memory:
            plan_cmd += ["--memory", a.memory]
        plan = json.loads(run(plan_cmd))
        ranked = plan["ranked"]
        if len(ranked) < a.min_ranked:
            sys.exit(f"FAIL: {len(ranked)} candidates ranked, expected at least {a.min_ranked}")
        worst_mem, worst_extrap = 0.0, 0.0
        checked_rows = False
        for i, c in enumerate(ranked):
            p = c["prediction"]
            if not c["fits"] or p["memory_bytes"]["total"] > plan["memory_limit_bytes"]:
                sys.exit(f"FAIL: ranked candidate {c['flags']} does not fit")
            if i and p["step_seconds"] < ranked[i - 1]["prediction"]["step_seconds"]:
                sys.exit("FAIL: the ranking is not by step time")
            if c["micro_batch_size"] * c["micro_batches"] != plan["global_batch"]:
                sys.exit(f"FAIL: {c['flags']}: micro-batch size x micro-batches is not the batch")
            rep = json.loads(run([a.shardc, "explain", model_at(c["micro_batch_size"]),
                                  "--hardware", a.hardware, "--json"] + c["flags"]))
            mem, want = p["memory_bytes"]["total"], rep["memory_bytes"]["total"]
            err = abs(mem - want) / want
            worst_mem = max(worst_mem, err)
            label = " ".join(c["flags"])
            if err > a.memory_tolerance:
                sys.exit(f"FAIL: {label}: planned memory {mem} vs compiled {want} ({err:.2%})")
            axes = set(p["bytes_per_axis"]) | set(rep["bytes_per_axis"])
            # Bytes are sums of ring fractions (n-1)/n of tensor sizes: equal to
            # the byte (not to the last bit of a double).
            for ax in sorted(axes):
                x = p["bytes_per_axis"].get(ax, 0)
                y = rep["bytes_per_axis"].get(ax, 0)
                if abs(x - y) > 1:
                    sys.exit(f"FAIL: {label}: bytes over {ax}: plan {x}, compiled {y}")
            if abs(p["communication_bytes"] - rep["communication_bytes"]) > 1:
                sys.exit(f"FAIL: {label}: communication bytes differ")
            if abs(p["step_seconds"] - rep["step_seconds"]) > 1e-9 * max(1.0, rep["step_seconds"]):
                sys.exit(f"FAIL: {label}: step {p['step_seconds']} vs {rep['step_seconds']}")
            if "extrapolated" in c:
                e = c["extrapolated"]
                if abs(e["communication_bytes"] - rep["communication_bytes"]) > 1:
                    sys.exit(f"FAIL: {label}: extrapolated bytes {e['communication_bytes']} vs "
                             f"compiled {rep['communication_bytes']}")
                # Compute and collective time are affine in the layers too, the
                # gradient buckets' latencies counted on the extrapolated bytes
                # (a line through two reports' bucket counts is not).
                if abs(e["step_seconds"] - rep["step_seconds"]) > 1e-6 * rep["step_seconds"]:
                    sys.exit(f"FAIL: {label}: extrapolated step {e['step_seconds']} vs "
                             f"compiled {rep['step_seconds']}")
                worst_extrap = max(worst_extrap,
                                   abs(e["memory_bytes"]["total"] - want) / want)
            # Attention rows (heads that do not divide tp): the choice the
            # candidate's first compile made, in its flags; the first such
            # candidate compiled with auto at full depth chooses the same
            # (the same report), so the plan's figures are what the default
            # compile would make.
            rows = c["attention_rows"]
            if (rows != "auto") != ("--attention-rows" in c["flags"]):
                sys.exit(f"FAIL: {label}: attention_rows {rows} and the flags disagree")
            if rows != "auto" and not checked_rows:
                k = c["flags"].index("--attention-rows")
                auto = json.loads(run([a.shardc, "explain", model_at(c["micro_batch_size"]),
                                       "--hardware", a.hardware, "--json"] +
                                      c["flags"][:k] + c["flags"][k + 2:]))
                if (auto["step_seconds"] != rep["step_seconds"] or
                        auto["memory_bytes"] != rep["memory_bytes"]):
                    sys.exit(f"FAIL: {label}: with attention rows auto the full compile "
                             f"differs ({auto['step_seconds']} s) from the plan's choice {rows}")
                checked_rows = True
                print(f"ok: attention rows {rows}: the full compile's own choice too")
            print(f"ok {i + 1}: {label}: {p['step_seconds'] * 1e3:.3f} ms, "
                  f"{mem / 2**30:.3f} GiB (compiled {want / 2**30:.3f}), "
                  f"{round(p['communication_bytes'])} bytes")
        # The communication floor a pipeline is skipped by (its one-micro-batch
        # step's communication, at 0.99): never above the screened step of
        # an evaluated candidate of the same mesh, strategy and micro-batch.
        # And its unhidable part (what a stage communicates beyond gradient
        # reductions and parameter gathers): never above the exposed
        # communication of such a candidate.
        floors = {(f["mesh"], f["strategy"], f["micro_batch_size"]): f
                  for f in plan.get("floors", [])}
        floored = 0
        for c in plan["evaluated"]:
            f = floors.get((c["mesh"], c["strategy"], c["micro_batch_size"]))
            if f is None or "prediction" not in c:
                continue
            screened = c.get("extrapolated", c["prediction"])
            step = screened["step_seconds"]
            if f["seconds"] > step * (1 + 1e-12):
                sys.exit(f"FAIL: {' '.join(c['flags'])}: communication floor {f['seconds']} "
                         f"exceeds its step {step}")
            exposed = screened["exposed_communication_seconds"]
            if f["exposed_seconds"] > exposed * (1 + 1e-12) + 1e-15:
                sys.exit(f"FAIL: {' '.join(c['flags'])}: exposed floor {f['exposed_seconds']} "
                         f"exceeds its exposed communication {exposed}")
            # The compute floor: per stage m x its per-micro-batch compute +
            # its once-per-step compute, the slowest over 1 - bubble, at
            # 0.99: never above the candidate's compute, nor with the
            # exposed floor above its step.
            m = c["micro_batches"]
            slowest = max((m * a + b for a, b in f.get("stage_compute_seconds", [])), default=0)
            bubble = screened.get("bubble", 0)
            compute_floor = 0.99 * slowest / (1 - bubble) if bubble < 1 else 0
            if compute_floor > screened["compute_seconds"] * (1 + 1e-9):
                sys.exit(f"FAIL: {' '.join(c['flags'])}: compute floor {compute_floor} exceeds "
                         f"its compute {screened['compute_seconds']}")
            if compute_floor + f["exposed_seconds"] > step * (1 + 1e-9):
                sys.exit(f"FAIL: {' '.join(c['flags'])}: compute + exposed floor exceeds its "
                         f"step {step}")
            # Per stage of the floor (a step of two micro-batches): the
            # unhidable communication of m micro-batches, m x its
            # per-micro-batch part + its once part, never above the
            # candidate's exposed communication; and with the gradient
            # window (stage s hides its gradient reductions behind at most
            # (1 + s)/m of the compute C) the step is at least
            # C (1 - min(1, (1 + s)/m)) + 0.99 (unhidable + gradient
            # reductions); checked with the candidate's own compute (the
            # search takes a lower bound of it).
            # (An interleaved schedule of v chunks per stage has every stage
            # send a micro-batch's activations and gradients v - 1 times
            # more: the first and the last stage's sends per micro-batch.)
            v = c.get("virtual_stages", 1)
            floor_stages = f.get("stage_communication_seconds", [])
            crossing = floor_stages[0][3] + floor_stages[-1][3] if floor_stages else 0
            for s, (per_mb, once, gradient, sends) in enumerate(floor_stages):
                unhidden = 0.99 * (m * (per_mb + (v - 1) * crossing) + once)
                if unhidden > exposed * (1 + 1e-9) + 1e-15:
                    sys.exit(f"FAIL: {' '.join(c['flags'])}: stage {s}'s unhidable floor "
                             f"{unhidden} exceeds its exposed communication {exposed}")
                w = min(1.0, (s + 1) / m)
                bound = screened["compute_seconds"] * (1 - w) + unhidden + 0.99 * gradient
                if bound > step * (1 + 1e-9):
                    sys.exit(f"FAIL: {' '.join(c['flags'])}: the gradient-window bound of "
                             f"stage {s}, {bound}, exceeds its step {step}")
            floored += 1
        # An interleaved pipeline against its 1F1B siblings (the same mesh,
        # strategy and memory policy, at most its micro-batches): the bound
        # the search skips it by, 0.99 (the sibling's exposed communication
        # + its slowest stage's compute / (1 - the interleaved bubble)),
        # never above its screened step.
        def policy(c):
            return (c["mesh"], c["strategy"], c["recompute"], c["regather_for_backward"],
                    c["offload_activations"])
        siblings = [c for c in plan["evaluated"]
                    if c.get("schedule") == "1f1b" and "prediction" in c]
        paired = 0
        for c in plan["evaluated"]:
            if c.get("schedule") != "interleaved" or "prediction" not in c:
                continue
            screened = c.get("extrapolated", c["prediction"])
            for s in siblings:
                if policy(s) != policy(c) or s["micro_batches"] > c["micro_batches"]:
                    continue
                sp = s.get("extrapolated", s["prediction"])
                if sp["bubble"] >= 1:
                    continue
                bound = 0.99 * (sp["exposed_communication_seconds"] + sp["compute_seconds"] *
                                (1 - sp["bubble"]) / (1 - screened["bubble"]))
                if bound > screened["step_seconds"] * (1 + 1e-9):
                    sys.exit(f"FAIL: {' '.join(c['flags'])}: the bound from its 1F1B sibling "
                             f"with {s['micro_batches']} micro-batches, {bound}, exceeds its "
                             f"step {screened['step_seconds']}")
                paired += 1
        print(f"interleaved pipelines at least their 1F1B siblings' bound: {paired} pairs")
        if plan["communication_floors"] != len(floors):
            sys.exit("FAIL: the floors counted and listed differ")
        print(f"communication and compute floors: {len(floors)}, at most the step of "
              f"{floored} candidates")
        print(f"{a.preset} on {a.devices} devices, global batch {a.global_batch}: "
              f"{len(ranked)} ranked of {len(plan['evaluated'])} evaluated; memory within "
              f"{worst_mem:.2%}; extrapolated memory within {worst_extrap:.2%}")


if __name__ == "__main__":
    main()
