#!/usr/bin/env python3
"""The compiled step on the CPU against PyTorch on the same CPU (issue 22's CPU figure).

For each model: `shardc gen` + `shardc compile` (fp32, one rank, the defaults: fused
logit GEMM + cross-entropy, AdamW with clipping) and bench/torch_gpt2.py (the same
GPT-2, fp32, eager, torch's AdamW with clipping), both on --threads threads, run
alternately (shardc, torch, shardc, torch, ...) --rounds times. Each run trains
--warmup untimed then --steps timed steps; tokens/s = B*T*steps / the timed steps'
time (shardc: the step binary's own per-step "ms", host time around a whole step,
which on the CPU is the step; torch: its RESULT line, timed the same way). Prints one
row per model: the median tokens/s of each side over the rounds and their ratio.

  python3 bench/cpu_vs_torch.py [--build build] [--rounds 3] [--threads 2]
      [--models tiny,4l-256,124M] [--json out.json]

Models (B, T): tiny = shardc's gpt2-tiny (h=64, L=2, 4 heads) at B=4, T=32;
4l-256 = 4 layers, h=256, 4 heads at B=4, T=256; 124M = GPT-2 small at B=1, T=256.
Every model has the padded 50304-token vocabulary. Needs a python with torch (--python,
default /usr/bin/python3: Debian's python3-torch).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: (torch_gpt2.py --model, shardc gen arguments, B, T)
MODELS = {
    "tiny": ("tiny", ["--preset", "gpt2-tiny"], 4, 32),
    "4l-256": ("4l-256", ["--preset", "gpt2-tiny", "--layers", "4", "--hidden", "256",
                          "--heads", "4", "--positions", "1024"], 4, 256),
    "124M": ("124M", ["--preset", "gpt2-124m"], 1, 256),
}
STEP = re.compile(r"^step\s+(\d+)/(\d+) \|.*\| ([\d.]+) ms")
RESULT = re.compile(r"tokens_per_s=([\d.]+)")
PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch


def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p.stdout


def shardc_tps(step, data, B, T, warmup, steps, env):
    out = run([step, "--data", data, "--steps", str(warmup + steps)], env)
    ms = [float(m.group(3)) for m in map(STEP.match, out.splitlines()) if m]
    timed = ms[warmup:]
    if len(timed) != steps:
        sys.exit(f"expected {steps} timed step lines from {step}, got {len(timed)}:\n{out[-2000:]}")
    return B * T * steps / (sum(timed) / 1e3)


def torch_tps(python, model, data, B, T, warmup, steps, env):
    out = run([python, os.path.join(ROOT, "bench", "torch_gpt2.py"), "--model", model,
               "--device", "cpu", "--dtype", "fp32", "--no-compile", "--batch", str(B), "--seq",
               str(T), "--steps", str(steps), "--warmup-steps", str(warmup), "--data", data,
               "--quiet"], env)
    m = RESULT.search(out)
    if not m:
        sys.exit(f"no RESULT line from torch_gpt2.py:\n{out[-2000:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--models", default="tiny,4l-256,124M")
    ap.add_argument("--json", default=None)
    ap.add_argument("--python", default=PYTHON, help="the interpreter with torch")
    a = ap.parse_args()
    shardc = os.path.join(a.build, "tools", "shardc", "shardc")
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OPENBLAS_NUM_THREADS=str(a.threads),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = tempfile.mkdtemp(prefix="shardc-cpu-vs-torch-")
    data = os.path.join(work, "fortunes.bin")
    fortunes = sorted(os.path.join("/usr/share/games/fortunes", f)
                      for f in os.listdir("/usr/share/games/fortunes")
                      if "." not in f and os.path.isfile(os.path.join("/usr/share/games/fortunes", f)))
    run([shardc, "tokenize", *fortunes, "-o", data], env)
    rows = []
    print(f"{'model':8} {'B x T':>9} {'shardc tok/s':>13} {'torch tok/s':>12} {'ratio':>6}  "
          f"(median of {a.rounds} alternating rounds, {a.threads} threads, fp32)")
    for name in a.models.split(","):
        tmodel, gen, B, T = MODELS[name]
        model = os.path.join(work, f"{name}.mlir")
        step = os.path.join(work, f"step-{name}")
        run([shardc, "gen", *gen, "--batch", str(B), "--seq", str(T), "-o", model], env)
        run([shardc, "compile", model, "-o", step], env)
        ours, theirs = [], []
        for _ in range(a.rounds):
            ours.append(shardc_tps(step, data, B, T, a.warmup, a.steps, env))
            theirs.append(torch_tps(a.python, tmodel, data, B, T, a.warmup, a.steps, env))
        s, t = statistics.median(ours), statistics.median(theirs)
        rows.append(dict(model=name, batch=B, seq=T, shardc_tokens_per_s=round(s, 1),
                         torch_tokens_per_s=round(t, 1), ratio=round(s / t, 3),
                         shardc_runs=[round(x, 1) for x in ours],
                         torch_runs=[round(x, 1) for x in theirs]))
        print(f"{name:8} {f'{B}x{T}':>9} {s:13.0f} {t:12.0f} {s / t:6.2f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(threads=a.threads, rounds=a.rounds, warmup=a.warmup, steps=a.steps,
                           rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
