#!/usr/bin/env python3
"""Turns what `scripts/gpu_checks.sh run` left in its output folders into the rows of
bench/results/gpu.jsonl: one JSON object per figure, shardc against the baseline that
ran in the same job on the same GPU.

  python3 bench/gpu_results.py OUTDIR [OUTDIR ...] [--date YYYY-MM-DD] [--device TEXT]
      [--append bench/results/gpu.jsonl]

Read from each OUTDIR (any of them may be missing; what is there is used):
  gpt2-*/results.txt        RESULT lines of bench/gpu_step.sh (impl=shardc / impl=torch):
                            "gpt2-124m tokens/s" and "gpt2-124m mfu" (model name lowered)
  attention-bench.log,      the JSON lines of bench/cuda/attention_bench.cu and
  attention-torch.log       bench/torch_attention.py, paired by (S, D, causal, dtype):
                            "attention fwd+bwd s=S" (D = 64; " d=D" otherwise) and
                            "attention fwd s=S", in TFLOP/s
  linear-ce-bench.log,      the impl=... lines of bench/cuda/linear_ce_bench.cu and
  linear-ce-torch.log       bench/torch_linear_ce.py: total ms and peak MiB against
                            PyTorch eager (the chunked torch.compile figure in "note")
  probe.log                 the device's name (nvidia-smi), unless --device is given;
                            without it, the GPU the gpt2 steps' RESULT lines name

Each row: date, device, what, shardc, baseline, unit, note. A figure whose baseline did
not run is written with "baseline": null. Rows go to stdout (or are appended to
--append); a table goes to stderr. Exit 1 when nothing was found.
"""
import argparse
import datetime
import glob
import json
import os
import re
import sys


def kv(line):
    return dict(re.findall(r"(\w+)=([^\s]+)", line))


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, errors="replace") as f:
        return f.read().splitlines()


def device_of(outdir):
    for line in read_lines(os.path.join(outdir, "probe.log")):
        m = re.match(r"(NVIDIA [^,]+), (\d+) MiB, ([\d.]+),", line)
        if m:
            return "%s (driver %s)" % (m.group(1), m.group(3))
    # Without a probe stage in the run: the device the steps name (shardc's
    # RESULT line says "cuda: GPU 0 (NAME), ...").
    for path in sorted(glob.glob(os.path.join(outdir, "gpt2-*", "results.txt"))):
        for line in read_lines(path):
            m = re.search(r"device=cuda:_GPU_\d+_\((NVIDIA[^)]*)\)", line)
            if line.startswith("RESULT ") and m:
                return m.group(1).replace("_", " ")
    return None


def gpt2_rows(outdir):
    rows = []
    for path in sorted(glob.glob(os.path.join(outdir, "gpt2-*", "results.txt"))):
        by_impl = {}
        for line in read_lines(path):
            if line.startswith("RESULT "):
                r = kv(line)
                by_impl[(r.get("impl"), r.get("model"))] = r
        models = sorted({m for _, m in by_impl})
        for model in models:
            s, t = by_impl.get(("shardc", model)), by_impl.get(("torch", model))
            if not s:
                continue
            name = "gpt2-" + model.lower()
            note = "B=%s T=%s %s, shardc %s; baseline bench/torch_gpt2.py" % (
                (t or {}).get("batch", "?"), (t or {}).get("seq", "?"), s.get("precision", "?"),
                s.get("device", "?").replace("_", " "))
            rows.append((name + " tokens/s", num(s.get("tokens_per_s")),
                         num((t or {}).get("tokens_per_s")), "tokens/s", note))
            rows.append((name + " mfu", num(s.get("mfu")), num((t or {}).get("mfu")),
                         "fraction of %s TFLOP/s" % (t or {}).get("peak_tflops", "989"), note))
    return rows


def json_lines(path):
    out = []
    for line in read_lines(path):
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    return out


def attention_rows(outdir):
    key = lambda r: (r.get("S"), r.get("D"), r.get("causal"), r.get("dtype"))
    base = {key(r): r for r in json_lines(os.path.join(outdir, "attention-torch.log"))
            if r.get("bench") == "attention"}
    rows = []
    for r in json_lines(os.path.join(outdir, "attention-bench.log")):
        if r.get("bench") != "attention":
            continue
        b = base.get(key(r), {})
        suffix = "s=%d" % r["S"] + ("" if r.get("D") == 64 else " d=%d" % r["D"])
        if not r.get("causal"):
            suffix += " full"
        note = "%s B=%s H=%s D=%s %s; baseline torch SDPA" % (
            r.get("dtype"), r.get("B"), r.get("H"), r.get("D"),
            "causal" if r.get("causal") else "bidirectional")
        rows.append(("attention fwd+bwd " + suffix, num(r.get("fwd_bwd_tflops")),
                     num(b.get("fwd_bwd_tflops")), "TFLOP/s", note))
        rows.append(("attention fwd " + suffix, num(r.get("fwd_tflops")),
                     num(b.get("fwd_tflops")), "TFLOP/s", note))
    return rows


def linear_ce_rows(outdir):
    mine = [kv(l) for l in read_lines(os.path.join(outdir, "linear-ce-bench.log"))
            if l.startswith("impl=")]
    theirs = {r.get("impl"): r for r in
              (kv(l) for l in read_lines(os.path.join(outdir, "linear-ce-torch.log"))
               if l.startswith("impl="))}
    rows = []
    for r in mine:
        shape = "H=%s V=%s %s tokens" % (r.get("hidden"), r.get("vocab"), r.get("tokens"))
        eager, chunked = theirs.get("torch_eager", {}), theirs.get("torch_chunked_compile", {})
        note = "%s; baseline torch eager; torch chunked compile %s ms, %s MiB" % (
            r.get("dtype"), chunked.get("total_ms", "-"), chunked.get("peak_MiB", "-"))
        rows.append(("linear+CE fwd+bwd ms (%s)" % shape, num(r.get("total_ms")),
                     num(eager.get("total_ms")), "ms", note))
        rows.append(("linear+CE peak MiB (%s)" % shape, num(r.get("peak_MiB")),
                     num(eager.get("peak_MiB")), "MiB", note))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdirs", nargs="+")
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--device", default=None)
    ap.add_argument("--append", default=None, help="append the rows to this file")
    a = ap.parse_args()
    rows = []
    for d in a.outdirs:
        if not os.path.isdir(d):
            print("gpu_results: %s: not a folder" % d, file=sys.stderr)
            return 1
        device = a.device or device_of(d) or "unknown GPU"
        for what, mine, base, unit, note in gpt2_rows(d) + attention_rows(d) + linear_ce_rows(d):
            rows.append({"date": a.date, "device": device, "what": what, "shardc": mine,
                         "baseline": base, "unit": unit, "note": note})
    if not rows:
        print("gpu_results: no results in %s" % " ".join(a.outdirs), file=sys.stderr)
        return 1
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if a.append:
        with open(a.append, "a") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    for r in rows:
        ratio = "-" if not r["baseline"] or r["shardc"] is None else "%.3f" % (
            r["shardc"] / r["baseline"])
        print("%-44s %12s %12s %-10s %s" % (r["what"], r["shardc"], r["baseline"], r["unit"],
                                            ratio), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
