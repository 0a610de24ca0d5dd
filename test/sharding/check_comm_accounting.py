#!/usr/bin/python3
"""Communication accounting: what `shardc explain --json` counts for a step
must equal the closed forms (issue 4).

Megatron tensor parallel (tp=2, GPT-2 tiny with L = 2 and 3 layers, b x s
tokens, hidden h): per layer per step exactly 4*b*s*h elements all-reduced over
tp (2 in the forward, 2 in the backward) and nothing gathered or scattered;
outside the layers one all-reduce for the vocabulary-parallel embedding and
one for the fused logit GEMM's dx, one scalar for the clipping norm, and the
vocabulary-parallel cross-entropy's per-token statistics (3 scalars per token
forward, 2 backward).

ZeRO-3 (dp=4): every parameter is all-gathered before each use, so a weight
matrix or norm scale is gathered twice per step (forward use, backward use), a
bias or norm shift once (its backward needs no value), the tied token
embedding three times (embedding, logits forward, logits backward) and the
position table once; every gradient is reduce-scattered exactly once.
Elements are per device: the gathered (full) tensor of an all-gather, the
input of a reduce-scatter or all-reduce.

Pipeline x tensor parallel (pp=2 x tp=2, L = 4 cut after 2 layers, m = 2
micro-batches of b sequences): a device runs its own stage's collectives, so
each stage's all-reduces over tp are its layers' 4*b*s*h per micro-batch plus
its end of the model's (stage 0 the embedding's b*s*h and the clipping norm's
scalar; stage 1 the logit GEMM's dx b*s*h and the cross-entropy's 5 scalars
per token), and the report's figures are its busiest stage's. Together the
stages move m times the unpipelined step's per-micro-batch collectives (the
norm's scalar once).
"""
import argparse
import json
import os
import subprocess
import sys


def explain(args, model, mesh, strategy):
    out = subprocess.run([args.shardc, "explain", model, "--mesh", mesh, "--strategy", strategy,
                          "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"shardc explain failed:\n{out.stderr}")
    report = json.loads(out.stdout)
    totals = {}
    for c in report["collectives"]:
        totals[(c["kind"], c["axes"])] = totals.get((c["kind"], c["axes"]), 0) + c["elements"]
    return totals


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--shardc", required=True)
    p.add_argument("--workdir", required=True)
    args = p.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    b, s, h, V, P = 4, 32, 64, 50304, 64  # gpt2-tiny
    models = {}
    for L in (2, 3):
        path = os.path.join(args.workdir, f"gpt2-tiny-{L}.mlir")
        subprocess.run([args.shardc, "gen", "--preset", "gpt2-tiny", "--layers", str(L), "-o", path],
                       check=True, stdout=subprocess.DEVNULL)
        models[L] = path
    failures = []

    def expect(what, got, want):
        status = "ok" if got == want else "FAIL"
        print(f"{what}: {got:.0f} (closed form {want:.0f}) [{status}]")
        if got != want:
            failures.append(what)

    # Megatron tensor parallel.
    tp = {L: explain(args, models[L], "tp=2", "tp") for L in models}
    for L, t in tp.items():
        kinds = sorted(k for k in t if k[0] != "all_reduce")
        if kinds:
            failures.append(f"tp L={L}: unexpected collectives {kinds}")
            print(f"tp L={L}: unexpected collectives {kinds} [FAIL]")
        tokens = b * s
        stats = 3 * tokens + 2 * tokens  # vocabulary-parallel cross-entropy
        want = (4 * L + 2) * b * s * h + stats + 1
        expect(f"tp=2, L={L}: elements all-reduced over tp", t.get(("all_reduce", "tp"), 0), want)
    expect("tp=2: all-reduced elements per layer",
           tp[3][("all_reduce", "tp")] - tp[2][("all_reduce", "tp")], 4 * b * s * h)

    # ZeRO-3.
    def gathered(L):
        twice = L * (12 * h * h + 2 * h) + h      # weights, norm scales
        once = L * (9 * h + 2 * h) + h            # biases, norm shifts
        # The tied embedding: one gather serves its lookup and the logit GEMM
        # (one run of forward ops), one the backward.
        return 2 * twice + once + 2 * V * h + P * h

    def params(L):
        return L * (12 * h * h + 13 * h) + 2 * h + V * h + P * h

    z3 = {L: explain(args, models[L], "dp=4", "zero3") for L in models}
    for L, t in z3.items():
        expect(f"zero3 dp=4, L={L}: elements all-gathered over dp", t.get(("all_gather", "dp"), 0),
               gathered(L))
        expect(f"zero3 dp=4, L={L}: elements reduce-scattered over dp",
               t.get(("reduce_scatter", "dp"), 0), params(L))
    expect("zero3: gathered elements per layer (2x the layer's weights and norm scales, "
           "1x its biases and shifts)",
           z3[3][("all_gather", "dp")] - z3[2][("all_gather", "dp")],
           2 * (12 * h * h + 2 * h) + 11 * h)
    expect("zero3: reduce-scattered elements per layer (1x the layer's parameters)",
           z3[3][("reduce_scatter", "dp")] - z3[2][("reduce_scatter", "dp")], 12 * h * h + 13 * h)
    # Pipeline stages.
    path = os.path.join(args.workdir, "gpt2-tiny-4.mlir")
    subprocess.run([args.shardc, "gen", "--preset", "gpt2-tiny", "--layers", "4", "-o", path],
                   check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([args.shardc, "explain", path, "--mesh", "pp=2,tp=2", "--strategy",
                          "pp+tp", "--micro-batches", "2", "--pipeline-cuts", "2", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"shardc explain failed:\n{out.stderr}")
    report = json.loads(out.stdout)
    m, tokens = 2, b * s
    # fp32; a ring all-reduce over 2 ranks moves 2 (n - 1)/n = 1x its tensor.
    per_stage = [st["bytes_per_axis"].get("tp", 0) / 4 for st in report["stage_costs"]]
    expect("pp=2 x tp=2, stage 0: elements all-reduced over tp", per_stage[0],
           m * (2 * 4 * b * s * h + b * s * h) + 1)
    expect("pp=2 x tp=2, stage 1: elements all-reduced over tp", per_stage[1],
           m * (2 * 4 * b * s * h + b * s * h + 5 * tokens))
    unpipelined = explain(args, path, "tp=2", "tp")[("all_reduce", "tp")]
    expect("pp=2 x tp=2: both stages' elements (m x the unpipelined step's, the norm once)",
           sum(per_stage), m * (unpipelined - 1) + 1)
    busiest = report["stage_costs"][report["busiest_stage"]]
    if report["bytes_per_axis"] != busiest["bytes_per_axis"] or \
            report["communication_bytes"] != busiest["communication_bytes"]:
        failures.append("pipeline: the report's bytes are not its busiest stage's")
        print("pipeline: the report's bytes are not its busiest stage's [FAIL]")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
