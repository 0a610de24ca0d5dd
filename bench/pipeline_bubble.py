#!/usr/bin/env python3
"""Pipeline bubble and stage-boundary bytes (issue 17), measured and static.

Part 1 (measured, this machine's CPU): a GPT-2-shaped model with a small
vocabulary (so that the layers, not the logit GEMM, carry the compute) is
compiled for pp=2 with each schedule and 1, 2, 4 and 8 micro-batches, run over
MPI with --profile on random ids below the vocabulary, and rank 0's (stage 0's) share of the step spent waiting in
transfers (the profile's collectives; a pure pp mesh has no other) is set
against the schedule's bubble (p-1)/(m+p-1) and the compiler's static one.
Two ranks on two cores: each stage has a core.

Part 2 (static, exact): bytes per step across each stage boundary from
`shardc explain --json` for GPT-2 124M and 1.5B (B=8 per micro-batch, T=1024,
fp32, 8 micro-batches, pp=4 and pp=8 with 1F1B) against the analytic
b*s*h*m per direction (plus the tied embedding's table forward and its summed
gradient back across the first-last boundary path, and a few scalars).

Usage:
  bench/pipeline_bubble.py [--shardc PATH] [--mpirun mpirun]
                           [--steps 6] [--skip-measured] [--skip-static]
Output: markdown tables on stdout.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl": "self,vader",
           "OMP_NUM_THREADS": "1"}


def run(cmd, **kw):
    env = dict(os.environ)
    env.update(MPI_ENV)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout


def small_vocab_tokens(a, work, vocab, count):
    """Deterministic token ids below `vocab` (an LCG), as an llm.c token file."""
    raw = os.path.join(work, "tokens.u16")
    x = 12345
    ids = bytearray()
    for _ in range(count):
        x = (1103515245 * x + 12345) % (1 << 31)
        ids += ((x >> 16) % vocab).to_bytes(2, "little")
    with open(raw, "wb") as f:
        f.write(ids)
    out = os.path.join(work, "tokens.bin")
    run([a.shardc, "tokenize", "--from-uint16", raw, "-o", out])
    return out


def measured(a, work):
    tokens = small_vocab_tokens(a, work, 256, 200000)
    model = os.path.join(work, "pp-bench.mlir")
    run([a.shardc, "gen", "gpt2", "--hidden", "256", "--layers", "8", "--heads", "4",
         "--vocab", "256", "--seq", "64", "--batch", "4", "-o", model])
    print("### Measured bubble, pp=2 on this machine's 2 cores (GPT-2 shape h=256, L=8, "
          "vocabulary 256, B=4 per micro-batch, T=64, fp32)\n")
    print("| schedule | micro-batches | (p-1)/(m+p-1) | compiler's slots | stage 0 waiting in "
          "transfers (measured) | step ms |")
    print("|---|---|---|---|---|---|")
    for schedule in ("gpipe", "1f1b"):
        for m in (1, 2, 4, 8):
            exe = os.path.join(work, "step-%s-%d" % (schedule, m))
            run([a.shardc, "compile", model, "-o", exe, "--mesh", "pp=2", "--strategy", "pp",
                 "--micro-batches", str(m), "--schedule", schedule, "--hardware", "cpu-mpi"])
            desc = run([exe, "--describe"])
            static = float(re.search(r"bubble ([0-9.]+)", desc).group(1))
            out = run([a.mpirun, "-np", "2", exe, "--data", tokens, "--steps", str(a.steps),
                       "--profile"])
            line = next(l for l in out.splitlines() if l.startswith("step ") and "kernels" in l)
            step_ms = float(re.match(r"step ([0-9.]+) ms", line).group(1))
            collectives = float(re.search(r"collectives ([0-9.]+)", line).group(1))
            formula = 1.0 / (m + 1)
            print("| %s | %d | %.3f | %.3f | %.3f | %.1f |" %
                  (schedule, m, formula, static, collectives / step_ms, step_ms))
    print()


def static(a, work):
    print("### Bytes per step across stage boundaries (`shardc explain --json`, fp32, B=8 per "
          "micro-batch, T=1024, 8 micro-batches, 1F1B)\n")
    print("| model | mesh | boundary | bytes | b*s*h*m | rest (tied table or its gradient, "
          "scalars) |")
    print("|---|---|---|---|---|---|")
    for preset, h, vocab in (("gpt2-124m", 768, 50304), ("gpt2-1.5b", 1600, 50304)):
        model = os.path.join(work, preset + ".mlir")
        run([a.shardc, "gen", "--preset", preset, "--batch", "8", "-o", model])
        for pp in (4, 8):
            rep = json.loads(run([a.shardc, "explain", model, "--mesh", "pp=%d" % pp,
                                  "--strategy", "pp", "--micro-batches", "8", "--json"]))
            act = 8 * 1024 * h * 4 * 8
            for b in rep["pipeline"]["transfer_bytes"]:
                want = act if abs(b["from"] - b["to"]) == 1 else 0
                print("| %s | pp=%d | %d -> %d | %d | %d | %d |" %
                      (preset, pp, b["from"], b["to"], b["bytes"], want, b["bytes"] - want))
    print("\nThe tied embedding's table (vocabulary x h x 4 bytes) goes from the first stage "
          "to the last once per step (directly: it appears on the 0 -> last pair), and its "
          "gradient, summed over the micro-batches on the last stage, comes back once; the "
          "other pairs carry only scalars (learning rate, gradient-norm partial sums, the "
          "loss).")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardc", default="build/tools/shardc/shardc")
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--skip-measured", action="store_true")
    ap.add_argument("--skip-static", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        if not a.skip_measured:
            measured(a, work)
        if not a.skip_static:
            static(a, work)


if __name__ == "__main__":
    main()
