#!/usr/bin/env python3
"""Planned activation memory per policy against Transformer Math (issue 16).

Part 1: GPT-2 1.5B (s = 1024, h = 1600, a = 25 heads, L = 48), bf16 with
Megatron-LM's storage (`--low-precision-residual`: every activation in bf16),
micro-batch b = 1 and 8 per device, tensor parallelism t = 1 (one device) and
t = 8 (`--mesh tp=8 --strategy tp`, no sequence parallelism; the layout auto picks for
25 heads on 8, and `--attention-rows split`), under
`--recompute none | selective | full`, `--regather-for-backward` (nothing
recomputed; what the forward all-gathered is gathered again for the backward,
as Megatron-LM's sequence parallelism does) and `--offload-activations`. Each cell is
`shardc explain --json`'s memory_bytes.activations: the compiled step's planned
workspace peak per device without the kernels' scratch (`./step --describe`
shows both; the scratch, mostly the fused LM head's logit chunk, is its own
column), and stored_activation_bytes: what the forward stores for the backward
(held across the first backward op; what the formulas count: the peak adds the
backward's working set), against the seed's formulas (bytes per device; with
sequence parallelism, "rows, sp", every term divided by t):

  no recomputation      s*b*h*L*(10 + 24/t + 5*a*s/(h*t))   (stores the s^2 scores)
  selective             s*b*h*L*(10 + 24/t)
  full                  2*s*b*h*L                           (layer inputs only)

shardc's attention never stores the s^2 scores (its backward recomputes them
from q, k, v and the output, as FlashAttention does), so its "none" is compared
with the selective formula too (column "none/sel").

Part 2: the largest micro-batch of GPT-2 1.5B (bf16, the default autocast
storage: f32 residual stream) that fits one 80 GiB H100 (the hardware file's
memory) under each policy: device memory = memory_bytes.total (parameters,
gradients, optimizer state, activations; the offloaded activations are host
memory) and the offloaded activations within the host's share per device
(`host_memory_bytes`: DGX H100's 2 TB over 8 GPUs), found by doubling then
bisection on `shardc gen --batch B`.

Usage: bench/activation_memory.py [--shardc PATH] [--out FILE] [--skip-batch]
Writes a markdown report to stdout and --out (default
bench/results/activation_memory.md).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

S, H, A, L = 1024, 1600, 25, 48
POLICIES = [("none", []), ("regather", ["--regather-for-backward"]),
            ("selective", ["--recompute", "selective"]),
            ("full", ["--recompute", "full"]), ("offload", ["--offload-activations"]),
            ("full+offload", ["--recompute", "full", "--offload-activations"])]


def explain(shardc, model, mesh, flags):
    out = subprocess.run([shardc, "explain", model, "--precision", "bf16", "--json"] + mesh +
                         flags, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def gen(shardc, batch, path):
    subprocess.run([shardc, "gen", "--preset", "gpt2-1.5b", "--batch", str(batch), "-o", path],
                   check=True, capture_output=True)


def formulas(b, t):
    sbhl = S * b * H * L
    return {"none": sbhl * (10 + 24 / t + 5 * A * S / (H * t)),
            "selective": sbhl * (10 + 24 / t), "full": 2 * sbhl}


def part1(shardc, tmp):
    rows = ["| b | t | attention | policy | planned peak (GB) | stored (GB) | formula (GB) | "
            "peak / formula | stored / formula | stored / selective formula | host (GB) | "
            "kernel scratch (GB) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for b in (1, 8):
        # tp does not split the batch: the model's batch is the micro-batch
        # every rank of the tp group holds.
        model = os.path.join(tmp, f"g{b}.mlir")
        gen(shardc, b, model)
        # t = 8: the layout auto picks for 25 heads on 8, and the attention
        # split by query rows (q, its output and the row statistics split
        # over tp), the counterpart of the formula's split by heads.
        # With sequence parallelism the formulas divide every term by t.
        for t, layout, extra, sp in ((1, "-", [], False), (8, "auto", [], False),
                                     (8, "rows", ["--attention-rows", "split"], False),
                                     (8, "rows, sp", ["--attention-rows", "split"], True)):
            f = formulas(b, t)
            if sp:
                f = {k: v / t for k, v in formulas(b, 1).items()}
                f["none"] = S * b * H * L * (34 + 5 * A * S / H) / t
            mesh = (["--mesh", "dp=1"] if t == 1 else
                    ["--mesh", "tp=8", "--strategy", "tp+sp" if sp else "tp"])
            for name, flags in POLICIES:
                r = explain(shardc, model, mesh, ["--low-precision-residual"] + extra + flags)
                act = r["memory_bytes"]["activations"]
                stored = r.get("stored_activation_bytes", 0)
                host = r["memory_bytes"].get("host", 0)
                scratch = r["memory_bytes"].get("kernel scratch", 0)
                key = name.split("+")[0] if name not in ("offload", "regather") else "none"
                ref = f[key]
                sel = f["selective"]
                rows.append(f"| {b} | {t} | {layout} | {name} | {act / 1e9:.2f} | "
                            f"{stored / 1e9:.2f} | {ref / 1e9:.2f} | {act / ref:.2f} | "
                            f"{stored / ref:.2f} | {stored / sel:.2f} | {host / 1e9:.2f} | "
                            f"{scratch / 1e9:.2f} |")
    return rows


def largest_batch(shardc, tmp, flags, limit, host_limit):
    def fits(b):
        model = os.path.join(tmp, f"lb{b}.mlir")
        gen(shardc, b, model)
        r = explain(shardc, model, ["--mesh", "dp=1"], flags)
        os.remove(model)
        m = r["memory_bytes"]
        return m["total"] <= limit and m.get("host", 0) <= host_limit, m
    lo, hi = 0, 1
    mem = None
    while True:
        ok, m = fits(hi)
        if not ok:
            break
        lo, mem, hi = hi, m, hi * 2
        if hi > 4096:
            return lo, mem
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok, m = fits(mid)
        if ok:
            lo, mem = mid, m
        else:
            hi = mid
    return lo, mem


def part2(shardc, tmp):
    here = os.path.dirname(os.path.abspath(__file__))
    hw = json.load(open(os.path.join(here, "..", "compiler", "cost", "hardware",
                                     "h100-8x-nvlink-ib.json")))
    limit, host_limit = hw["memory_bytes"], hw["host_memory_bytes"]
    rows = ["| policy | largest micro-batch | device memory (GiB) | of which activations (GiB) | "
            "host (GiB) |", "|---|---|---|---|---|"]
    # (Regathering changes nothing on one device.)
    for name, flags in [p for p in POLICIES if p[0] != "regather"]:
        b, mem = largest_batch(shardc, tmp, flags, limit, host_limit)
        if mem is None:
            rows.append(f"| {name} | 0 | - | - | - |")
            continue
        rows.append(f"| {name} | {b} | {mem['total'] / 2**30:.2f} | "
                    f"{mem['activations'] / 2**30:.2f} | {mem.get('host', 0) / 2**30:.2f} |")
    return rows


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--shardc", default=os.path.join(here, "..", "build", "tools", "shardc",
                                                     "shardc"))
    ap.add_argument("--out", default=os.path.join(here, "results", "activation_memory.md"))
    ap.add_argument("--skip-batch", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = [f"# Planned activation memory per policy ({datetime.date.today()}, "
               "`bench/activation_memory.py`)", "",
               "GPT-2 1.5B, bf16 storage throughout (`--low-precision-residual`), s = 1024; "
               "planned workspace peak per device (activations; the kernels' scratch "
               "apart) against Transformer Math:", ""]
        out += part1(args.shardc, tmp)
        if not args.skip_batch:
            out += ["", "Largest GPT-2 1.5B micro-batch on one H100 (80 GiB; 256 GiB of host "
                    "memory for offloaded activations), bf16 (autocast storage), per policy:", ""]
            out += part2(args.shardc, tmp)
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
