#!/usr/bin/env python3
"""When data, fully-sharded data and tensor parallelism turn communication-bound,
from shardc's own cost figures, next to the numbers of seed 002 ("How to
Parallelize a Transformer for Training", TPU v5p: C = 4.59e14 FLOP/s bf16,
W = 2 x 9e10 B/s over one ICI axis).

The seed's results:
  - DP and FSDP are compute-bound when the batch per device exceeds C/W = 2550
    tokens (bf16 gradients; the reductions overlap the backward's matmuls).
  - Tensor (model) parallelism over Y devices is compute-bound when the MLP
    width F > Y * C/W, i.e. Y < F / 2550 (8-way needs F >= 20k).
  - Mixed FSDP + TP is compute-bound above 2 * 2550^2 / F tokens per device
    (F = 30k: 432).

shardc's figures come from `shardc explain --json` on the hardware file
compiler/cost/hardware/tpu-v5p-ici-1d.json (the seed's C and W, no latency),
for generated GPT-2-shaped models (F = 4h, a tiny vocabulary and short
sequences so the embedding and attention do not blur the layer's GEMMs):
  - DP / FSDP: the batch per device at which the gradient reductions (ZeRO-3:
    plus the backward's parameter gathers) take as long as the backward's
    compute (`gradient_reduction_seconds` + backward gathers vs
    `backward_compute_seconds`); both are measured at two batch sizes and the
    crossover is where the lines meet.
  - TP with sequence parallelism (Megatron-SP: all-gather + reduce-scatter per
    block, the seed's scheme): the width at which the tensor axis's
    communication time equals the compute time, from two widths.
Where shardc differs from the seed, the script says by which factor and why
(fp32 gradient reductions: 2x; attention's own gather/scatter pair per layer).

usage: bench/planner_crossover.py [--shardc build/tools/shardc/shardc]
"""
import argparse
import json
import os
import subprocess
import tempfile

C = 4.59e14
W = 1.8e11
SEED_DP = 2550
HW = "tpu-v5p-ici-1d"


def explain(shardc, tmp, hidden, batch, seq, mesh, strategy, layers=4, extra=()):
    model = os.path.join(tmp, f"m{hidden}-{batch}.mlir")
    subprocess.run([shardc, "gen", "gpt2", "--hidden", str(hidden), "--heads", str(hidden // 128),
                    "--layers", str(layers), "--vocab", "128", "--positions", str(seq), "--seq",
                    str(seq), "--batch", str(batch), "-o", model], check=True)
    out = subprocess.run([shardc, "explain", model, "--mesh", mesh, "--strategy", strategy,
                          "--precision", "bf16", "--hardware", HW, "--json", *extra], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def meet(x1, a1, b1, x2, a2, b2):
    """x where a(x) = b(x), a and b linear through the two points."""
    # a = a1 + (x - x1) sa, b = b1 + (x - x1) sb
    sa = (a2 - a1) / (x2 - x1)
    sb = (b2 - b1) / (x2 - x1)
    return x1 + (b1 - a1) / (sa - sb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardc", default="build/tools/shardc/shardc")
    a = ap.parse_args()
    seq, hidden, dp = 128, 4096, 64
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for strategy, extra in (("dp", ()), ("dp", ("--low-precision-reductions",)),
                                ("zero3", ()), ("zero3", ("--low-precision-reductions",))):
            pts = []
            for per_device in (4, 8):  # sequences per device
                r = explain(a.shardc, tmp, hidden, per_device * dp, seq, f"dp={dp}", strategy,
                            extra=extra)
                comm = r["gradient_reduction_seconds"] + r.get("backward_parameter_gather_seconds", 0)
                pts.append((per_device * seq, comm, r["backward_compute_seconds"]))
            (x1, c1, b1), (x2, c2, b2) = pts
            tokens = meet(x1, c1, b1, x2, c2, b2)
            name = "DP" if strategy == "dp" else "FSDP (ZeRO-3)"
            name += ", bf16 reductions" if extra else ""
            rows.append((f"{name}: tokens per device", tokens, SEED_DP, tokens / SEED_DP))
        # Tensor parallelism with sequence parallelism over Y = 8: the width
        # where the tp axis's communication time equals the compute time.
        # Per layer: the difference between 3 and 2 layers (the embedding, the
        # head and the loss are the rest).
        Y = 8
        pts = []
        for h in (2048, 4096):
            per = []
            for layers in (2, 3):
                r = explain(a.shardc, tmp, h, 8, seq * 8, f"tp={Y}", "tp+sp", layers=layers)
                tp = sum(c["seconds"] for c in r["collectives"] if c["axes"] == "tp")
                per.append((tp, r["compute_seconds"]))
            pts.append((4 * h, per[1][0] - per[0][0], per[1][1] - per[0][1]))
        (f1, t1, k1), (f2, t2, k2) = pts
        # compute ~ F^2, comm ~ F: the ratio compute/comm is linear in F.
        r1, r2 = k1 / t1, k2 / t2
        width = f1 + (1 - r1) * (f2 - f1) / (r2 - r1)
        rows.append((f"TP+SP over {Y}: MLP width F", width, Y * SEED_DP, width / (Y * SEED_DP)))
    print(f"seed 002's crossovers vs shardc's cost figures (hardware {HW}: C = {C:.3g} FLOP/s, "
          f"W = {W:.3g} B/s, no latency)\n")
    print(f"{'crossover':<48} {'shardc':>10} {'seed':>10} {'ratio':>7}")
    for name, ours, seed, ratio in rows:
        print(f"{name:<48} {ours:>10.0f} {seed:>10.0f} {ratio:>7.2f}")
    print("""
why they differ:
  DP: by default shardc reduces fp32 gradients (fp32 master weights), so each
      all-reduce moves twice the bytes of the seed's bf16 gradients: expect ~2x; with
      --low-precision-reductions the gradients are reduced in bf16 before their
      widening: expect ~1x. The all-reduce over 64 moves 2*63/64 of the bytes;
      attention's backward FLOPs (6*L*h*T per token, small at T=128) lower it slightly.
  FSDP: the backward gathers every weight again (ZeRO-3 keeps none across phases), so
      the backward carries reduce-scatters of fp32 gradients (4N bytes) plus bf16 gathers
      (2N) where the seed counts a bf16 reduce-scatter (2N... its 4N all-reduce split in
      two): 6N/4N = ~1.5x; with bf16 reductions 4N/4N = ~1x by bytes (measured 1.15x:
      the rest is not analysed yet); the forward's gathers hide behind the forward.
  TP+SP (per layer, fwd + bwd): shardc's step moves 8 gathers/scatters of b*s*h (the
      attention block's pair as well as the MLP's, forward and backward), each (Y-1)/Y of
      the tensor on a ring, against 6 x 12h^2 FLOPs per token over Y; the seed counts the
      MLP's forward pair against its 2 GEMMs (4 b s h F / Y): expected ratio
      (8 x 7/8 / 2) / (18 / 4) = 0.78; attention's T-dependent FLOPs lower it a little.""")


if __name__ == "__main__":
    main()
