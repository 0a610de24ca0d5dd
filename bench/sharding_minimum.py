#!/usr/bin/env python3
"""Collective bytes shardc plans vs. the ring-collective analytic minimum (issue 15).

For GPT-2 124M and 1.5B (B=8, T=1024, fp32, the logit GEMM and the loss unfused)
this generates each model, runs `shardc explain --json` for every sensible (mesh,
strategy) pair and compares
the report's `communication_bytes` (bytes per device per training step, ring
model) with the analytic minimum for the split the run achieved.

Usage:
  bench/sharding_minimum.py [--models 124m,1.5b] [--out FILE] [--shardc PATH]
                            [--keep-json DIR] [--precision fp32|bf16]
                            [--low-precision-reductions]

Output: a markdown table on stdout, also written (with a dated header) to
--out (default bench/results/sharding_minimum.md; _bf16.md, _bf16_lowred.md under
bf16). MB = 10^6 bytes.

Runs
----
  dp=8          dp, zero1, zero2, zero3, mics (mics needs two data axes: n/a)
  tp=8          tp, tp+sp  (`sp` alone is the same preset as tp+sp)
  dp=4,tp=2 and dp=2,tp=4
                dp+tp, zero1+tp, zero2+tp, zero3+tp,
                dp+tp+sp, zero1+tp+sp, zero2+tp+sp, zero3+tp+sp,
                mics      (no tp component: both axes are data axes, replica =
                           dp, partition = the axis named tp),
                mics+tp   (needs 3 axes: n/a)
A run that shardc rejects is listed as "n/a (shardc's diagnostic)".
Data-only presets on the 2-axis meshes are not run (they leave the tp axis
idle: the batch is split over dp only, every tp rank repeats the work).

Notation
--------
  B_e = 4        bytes per element under fp32. Under bf16 (--precision bf16,
                 shardc's mixed precision: fp32 master weights and optimizer
                 state, bf16 copies for compute) each term takes the bytes of
                 what it moves:
                   E_p(p)  a parameter gathered (ZeRO, MiCS): 2 where the step
                           reads p through a bf16 copy (the report lists a
                           `param_bf16:<p>` value), else 4 (the tied wte and
                           wpe, read in fp32 by the embedding lookup, as
                           PyTorch's autocast leaves embeddings in fp32);
                   E_g(p)  a gradient reduced: 4 (the fp32 master's), or 2
                           with --low-precision-reductions where p has a copy;
                   E_a     a layer's activation (tensor-parallel collectives):
                           2; the embedding's output 4 (the fp32 lookup);
                           cross-entropy statistics 4.
                 Every data-term formula below then weighs each parameter's
                 elements by its E (P_oth_g = sum size(p) E_g(p) / tp_factor,
                 ...); under fp32 every E is 4 and the formulas are the ones
                 written.
  P              parameter count: sum of the sizes of the arguments of
                 @forward annotated with #xf.param (exact; the vocabulary is
                 padded to V = 50304, the logit weight is tied to wte)
  t              size of the tp axis when the strategy has tp/sp, else 1
  d              product of the other (data) axes; b = B/d rows per rank
  s = T = 1024, h hidden, L layers (from `shardc gen --summary`)
  ring(n)        a ring all-reduce moves 2(n-1)/n of the buffer per device,
                 all-gather and reduce-scatter (n-1)/n of the full buffer.
  tp_factor(p)   product of t over the dims of parameter p that the run's
                 stored sharding (the explain JSON's `values` entry whose op
                 is the parameter's name) splits over the tp axis; dp splits
                 (ZeRO-3, MiCS, ...) are ignored there. Exact, not estimated:
                 if a parameter were missing from `values` the script falls
                 back to tp_factor = 1 and marks the row "approx".
  P_loc          sum over parameters of size(p) / tp_factor(p): parameters
                 per tp rank. Column-parallel weights and biases, row-parallel
                 weights and the vocabulary-parallel wte count P_tp/t, the
                 replicated ones (layernorms, row-parallel biases, wpe, any
                 weight the run left whole) count whole.
  P_rep          under sequence parallel only: sum of size(p) over parameters
                 with tp_factor(p) = 1 (layernorm scales/biases, row-parallel
                 biases, wpe, ...). Their gradients are produced from a
                 sequence shard, so they must be summed over tp as well as dp
                 (Megatron's layernorm-gradient all-reduce). Without sp,
                 P_rep = 0 (tp ranks compute identical replicated gradients).
  P_oth          P_loc - P_rep.

Minimum per device per step (bytes = elements x B_e)
----------------------------------------------------
Data-parallel term (gradient reduction over the d data ranks):
  dp, zero1, zero2 (1 micro-batch: zero2 = zero1):
      2(d-1)/d * P_oth  +  2(dt-1)/(dt) * P_rep
      (all-reduce, or reduce-scatter of gradients + all-gather of updated
       parameters: same bytes in fp32; P_rep is summed over all d*t ranks in
       one ring. Under bf16, dp all-reduces gradients, 2(d-1)/d * P_oth_g,
       while zero1/2 reduce-scatter them and gather the bf16 copies,
       (d-1)/d * (P_oth_g + P_oth_p): less than dp by the copies' half.)
  zero3 / fsdp: all-gather for forward, all-gather for backward,
      reduce-scatter of gradients = 1.5x the above:
      3(d-1)/d * P_oth  +  (2(d-1)/d + (dt-1)/(dt)) * P_rep
      (the textbook count: two gathers of every parameter. Biases, layernorm
       biases and wpe are not needed by any backward op, so one gather would
       do for them - about 1% of P; the tied wte has three uses (embedding,
       logit GEMM forward, logit GEMM backward) and is counted twice.)
  mics (replica axis n = first axis, partition axis m = second axis, d = n*m,
      parameters split over m, replicated over n): two all-gathers over m,
      reduce-scatter over m, then all-reduce of the gradient shard over n:
      3(m-1)/m * P  +  2(n-1)/n * P/m
  no data component (tp=8): d = 1, so only the P_rep term 2(t-1)/t * P_rep.

Tensor-parallel term (Megatron, b = B/d), with f = 2(t-1)/t:
  layers:    4 * L * f * b*s*h   (per layer 2 all-reduces of b*s*h forward -
                                  after attention's and the MLP's row-parallel
                                  GEMM - and 2 backward - the f operators
                                  before the column-parallel GEMMs)
  embedding: 2 * f * b*s*h       (vocabulary-parallel wte: forward all-reduce
                                  of the embedding output, and the all-reduce
                                  of the gradient w.r.t. the logit GEMM's input
                                  (column-parallel over V) in backward)
  ce:        3 * f * b*s         (vocabulary-parallel cross-entropy, Megatron:
                                  per-token max, sum of exp, target logit)
  Sequence parallel replaces every all-reduce by a reduce-scatter + all-gather
  pair: same bytes; its only extra is the P_rep summation in the data term.

Excluded: scalar all-reduces (loss, gradient-norm for clipping: < 1 kB).
The Megatron term assumes attention splits over heads (heads % t == 0);
GPT-2 124M (12 heads) does not split over 8, 1.5B (25 heads) over none of
2, 4, 8. Such a cell's attention takes one of two layouts, and its minimum
adds that layout's own term (per layer, with g = (t-1)/t, u = b*s*h):
  attention whole (replicated over tp): the column-parallel q, k, v are
      gathered (3 all-gathers) and, in the backward, the gradient of the
      attention output from the row-parallel GEMM (1): 4 * L * g * u.
  attention by query rows (the report's query_row_splits): k and v gathered
      (every row block attends to all keys) and their partial gradients
      reduce-scattered (2 + 2); q and the output gradient moved from the
      column split to row blocks, the output and dq back, by all-to-alls of
      a shard (4 x g * u / t): L * (4 * g * u + 4 * g * u / t).
  The ratio column compares with this minimum; "vs heads split" compares
  with the Megatron term alone (what heads dividing t would allow).

Columns: achieved = communication_bytes; minimum = data + tp terms above;
ratio = achieved / minimum; achieved by collective = bytes by collective kind
and mesh axes (AR all_reduce, AG all_gather, RS reduce_scatter, A2A
all_to_all; "scalars" = entries under 0.05 MB); achieved - minimum by axes =
the report's bytes_per_axis minus the minimum attributed to the same axes
(data term of P_oth -> the data axes, P_rep term -> all axes, MiCS -> its
partition / replica axis, tp term -> tp), largest first: where the excess is.
Sanity check: dp, zero1, zero2 on dp=8 and dp+tp on both 2-axis meshes of
124M come out at exactly 1.000.
"""

import argparse
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B_E = 4
# Element bytes per term (see the docstring): set by --precision.
PRECISION = "fp32"
LOWRED = False
BATCH = 8
SEQ = 1024
MB = 1e6

MODELS = collections.OrderedDict([("124m", "gpt2-124m"), ("1.5b", "gpt2-1.5b")])

TWO_AXIS = ["dp+tp", "zero1+tp", "zero2+tp", "zero3+tp",
            "dp+tp+sp", "zero1+tp+sp", "zero2+tp+sp", "zero3+tp+sp",
            "mics", "mics+tp"]
RUNS = [
    ("dp=8", ["dp", "zero1", "zero2", "zero3", "mics"]),
    ("tp=8", ["tp", "tp+sp"]),
    ("dp=4,tp=2", TWO_AXIS),
    ("dp=2,tp=4", TWO_AXIS),
]

KIND_SHORT = {"all_reduce": "AR", "all_gather": "AG", "reduce_scatter": "RS",
              "all_to_all": "A2A"}

PARAM_RE = re.compile(
    r'%arg\d+: tensor<((?:\d+x)+)(\w+)> \{xf\.param = #xf\.param<name = "([^"]+)", role = (\w+)')


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True)


def gen_model(shardc, preset, path):
    r = run([shardc, "gen", "--preset", preset, "--batch", str(BATCH),
             "--seq", str(SEQ), "-o", path, "--summary"])
    if r.returncode != 0:
        sys.exit("shardc gen %s failed:\n%s" % (preset, r.stderr))
    m = re.search(r"L=(\d+) h=(\d+) heads=(\d+).*T=(\d+) B=(\d+)", r.stdout)
    if not m:
        sys.exit("cannot parse the shape line of `shardc gen --summary`:\n" + r.stdout)
    L, h, heads, T, B = (int(x) for x in m.groups())
    assert (T, B) == (SEQ, BATCH), (T, B)
    with open(path) as f:
        text = f.read()
    sig = text[text.index("func.func @forward"):]
    sig = sig[:sig.index("{\n")]  # the signature line ends with "-> tensor<f32> {"
    params = []
    for dims, dtype, name, role in PARAM_RE.findall(sig):
        shape = [int(x) for x in dims.rstrip("x").split("x")]
        size = 1
        for x in shape:
            size *= x
        params.append({"name": name, "role": role, "shape": shape, "size": size})
    P = sum(p["size"] for p in params)
    m = re.search(r"parameters\s+(\d+) .*padded", r.stdout)
    if m and int(m.group(1)) != P:
        sys.exit("parameter count from the signature (%d) disagrees with --summary (%s)"
                 % (P, m.group(1)))
    return {"L": L, "h": h, "heads": heads, "params": params, "P": P}


def parse_mesh(mesh):
    axes = collections.OrderedDict()
    for part in mesh.split(","):
        k, v = part.split("=")
        axes[k] = int(v)
    return axes


def dims_of(sharding):
    """'[tp+dp, -]' -> [['tp', 'dp'], []]"""
    inner = sharding.strip()[1:-1].strip()
    if not inner:
        return []
    return [[] if d.strip() == "-" else d.strip().split("+") for d in inner.split(",")]


def prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def minimum(model, mesh, strategy, report):
    """The analytic minimum (bytes) split into named terms; see the docstring."""
    axes = parse_mesh(mesh)
    comps = strategy.split("+")
    uses_tp = "tp" in comps or "sp" in comps
    sp = "sp" in comps
    t = axes.get("tp", 1) if uses_tp else 1
    data_axes = [a for a in axes if not (uses_tp and a == "tp")]
    d = prod(axes[a] for a in data_axes)
    b = BATCH // d
    s, h, L = SEQ, model["h"], model["L"]

    shard = {}
    for v in report.get("values", []):
        shard.setdefault(v["op"], v["sharding"])
    approx = False
    p_rep = p_oth = 0.0
    # The same sums in bytes: of the gradients reduced (g) and of the
    # parameters gathered (p), each parameter at its own element size.
    copies = {op.split(":", 1)[1] for op in shard if op.startswith("param_bf16:")}
    bytes_ = collections.Counter()
    for p in model["params"]:
        if p["name"] in shard:
            f = prod(t for dim in dims_of(shard[p["name"]]) for a in dim if a == "tp")
        else:
            approx, f = True, 1
        if uses_tp and f > t:
            raise RuntimeError("%s split more than t ways: %s" % (p["name"], shard[p["name"]]))
        bf16 = PRECISION == "bf16" and p["name"] in copies
        e_p = 2 if bf16 else B_E
        e_g = 2 if bf16 and LOWRED else B_E
        part = "rep" if sp and f == 1 else "oth"
        n = p["size"] if part == "rep" else p["size"] / f
        if part == "rep":
            p_rep += n
        else:
            p_oth += n
        bytes_[part + "_g"] += n * e_g
        bytes_[part + "_p"] += n * e_p

    terms = collections.OrderedDict()
    per_axis = collections.Counter()  # the same bytes by the mesh axes they cross
    data_key = axis_key(data_axes)
    all_key = axis_key(list(axes))
    oth_g, oth_p = bytes_["oth_g"], bytes_["oth_p"]
    rep_g, rep_p = bytes_["rep_g"], bytes_["rep_p"]
    if "mics" in comps:
        rep_ax, part_ax = data_axes[0], data_axes[1]
        n, m = axes[rep_ax], axes[part_ax]
        # Two gathers and a reduce-scatter over the partition, the gradient
        # shard all-reduced over the replicas.
        per_axis[part_ax] += (m - 1) / m * (2 * (oth_p + rep_p) + oth_g + rep_g)
        per_axis[rep_ax] += 2 * (n - 1) / n * (oth_g + rep_g) / m
        terms["data"] = per_axis[part_ax] + per_axis[rep_ax]
    else:
        zero3 = "zero3" in comps or "fsdp" in comps
        zero12 = "zero1" in comps or "zero2" in comps
        dt = d * t
        if zero3:
            oth = (d - 1) / d * (2 * oth_p + oth_g)
            rep = 2 * (d - 1) / d * rep_p
            per_axis[data_key] += oth + rep
            per_axis[all_key] += (dt - 1) / dt * rep_g
        elif zero12:
            per_axis[data_key] += (d - 1) / d * (oth_g + oth_p)
            per_axis[all_key] += (dt - 1) / dt * (rep_g + rep_p)
        else:
            per_axis[data_key] += 2 * (d - 1) / d * oth_g
            per_axis[all_key] += 2 * (dt - 1) / dt * rep_g
        terms["data"] = sum(per_axis.values())
    if uses_tp:
        f = 2 * (t - 1) / t
        # Activations at E_a; the embedding's output at the lookup's fp32.
        e_a = 2 if PRECISION == "bf16" else B_E
        terms["tp"] = ((4 * L * f * b * s * h + f * b * s * h) * e_a + f * b * s * h * B_E
                       + 3 * f * b * s * B_E)
        per_axis["tp"] += terms["tp"]
        if model["heads"] % t:
            g, u = (t - 1) / t, b * s * h
            if report.get("query_row_splits"):
                layout, extra = "attention rows", L * (4 * g * u + 4 * g * u / t) * e_a
            else:
                layout, extra = "attention whole", 4 * L * g * u * e_a
            terms[layout] = extra
            per_axis["tp"] += extra
    info = {"t": t, "d": d, "b": b, "p_loc": p_rep + p_oth, "p_rep": p_rep,
            "approx": approx, "per_axis": per_axis}
    return terms, info


def axis_key(names):
    return ",".join(sorted(names))


def excess(report, per_axis):
    """achieved - minimum per set of mesh axes (MB), largest first."""
    ach = collections.Counter()
    for k, v in report["bytes_per_axis"].items():
        ach[axis_key(k.split(","))] += v
    keys = set(ach) | set(k for k, v in per_axis.items() if v)
    diff = [(k, ach[k] - per_axis.get(k, 0)) for k in keys]
    diff = [(k, v) for k, v in diff if abs(v) >= 0.05 * MB]
    diff.sort(key=lambda kv: -abs(kv[1]))
    return ", ".join("[%s] %+.1f" % (k, v / MB) for k, v in diff) or "-"


def breakdown(report):
    acc = collections.OrderedDict()
    for c in report["collectives"]:
        key = "%s[%s]" % (KIND_SHORT.get(c["kind"], c["kind"]), c["axes"])
        acc[key] = acc.get(key, 0) + c["bytes"]
    return ", ".join("%s %.1f" % (k, v / MB) for k, v in acc.items() if v >= 0.05 * MB) \
        + ("" if all(v >= 0.05 * MB for v in acc.values()) else ", scalars")


def fmt_mb(x):
    return "%.1f" % (x / MB)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="124m,1.5b",
                    help="comma-separated subset of: " + ", ".join(MODELS))
    ap.add_argument("--out", help="default bench/results/sharding_minimum.md, "
                                  "sharding_minimum_bf16.md under --precision bf16 "
                                  "(_bf16_lowred.md with --low-precision-reductions)")
    ap.add_argument("--shardc", default=os.path.join(ROOT, "build", "tools", "shardc", "shardc"))
    ap.add_argument("--keep-json", metavar="DIR", help="keep each explain report here")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--low-precision-reductions", action="store_true",
                    help="bf16: gradients reduced in bf16 (shardc's flag of that name)")
    args = ap.parse_args()
    global PRECISION, LOWRED
    PRECISION, LOWRED = args.precision, args.low_precision_reductions
    if LOWRED and PRECISION != "bf16":
        ap.error("--low-precision-reductions needs --precision bf16")
    if not args.out:
        suffix = "" if PRECISION == "fp32" else "_bf16" + ("_lowred" if LOWRED else "")
        args.out = os.path.join(ROOT, "bench", "results", "sharding_minimum%s.md" % suffix)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    for m in models:
        if m not in MODELS:
            ap.error("unknown model %r (known: %s)" % (m, ", ".join(MODELS)))

    header = ("| model | mesh | strategy | achieved MB | minimum MB (terms) | ratio "
              "| achieved by collective (MB) | achieved - minimum by axes (MB) | modelled step (ms) |\n"
              "|---|---|---|---:|---|---:|---|---|---:|")
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for key in models:
            path = os.path.join(tmp, key + ".mlir")
            model = gen_model(args.shardc, MODELS[key], path)
            name = "GPT-2 %s" % key.upper()
            for mesh, strategies in RUNS:
                for strategy in strategies:
                    out = os.path.join(args.keep_json or tmp,
                                       "%s_%s_%s.json" % (key, mesh.replace(",", "_"), strategy))
                    if args.keep_json:
                        os.makedirs(args.keep_json, exist_ok=True)
                    # The logit GEMM and the loss apart (--no-fuse-linear-ce): the
                    # form these rows were first measured in and the minimum's
                    # terms describe (fused is the default since 2026-11-26).
                    cmd = [args.shardc, "explain", path, "--mesh", mesh, "--strategy", strategy,
                           "--no-fuse-linear-ce", "--precision", PRECISION, "--json", "-o", out]
                    if LOWRED:
                        cmd.append("--low-precision-reductions")
                    r = run(cmd)
                    if r.returncode != 0:
                        m = re.search(r"error: (.*)", r.stderr)
                        why = m.group(1) if m else r.stderr.strip().splitlines()[0]
                        rows.append("| %s | %s | %s | n/a (%s) | | | | | |"
                                    % (name, mesh, strategy, why))
                        continue
                    with open(out) as f:
                        report = json.load(f)
                    terms, info = minimum(model, mesh, strategy, report)
                    mn = sum(terms.values())
                    megatron = sum(v for k, v in terms.items() if not k.startswith("attention"))
                    ach = report["communication_bytes"]
                    mark = []
                    if info["t"] > 1 and model["heads"] % info["t"]:
                        mark.append("heads %d %% t=%d != 0" % (model["heads"], info["t"]))
                    if info["approx"]:
                        mark.append("approx")
                    if report.get("query_row_splits"):
                        # Attention split by its query rows (the layout the
                        # propagation took because its modelled step is faster):
                        # more bytes than Megatron's head split, which these
                        # heads cannot take.
                        mark.append("attention by query rows")
                    if mn != megatron:
                        mark.append("vs heads split %.3f" % (ach / megatron))
                    strat = strategy + (" (replica=%s, partition=%s)" % tuple(parse_mesh(mesh))
                                        if strategy == "mics" else "")
                    term_s = " + ".join("%s %s" % (k, fmt_mb(v)) for k, v in terms.items())
                    rows.append("| %s | %s | %s | %s | %s (%s) | %.3f%s | %s | %s | %.1f |" % (
                        name, mesh, strat, fmt_mb(ach), fmt_mb(mn), term_s, ach / mn,
                        (" (" + "; ".join(mark) + ")") if mark else "", breakdown(report),
                        excess(report, info["per_axis"]), report["step_seconds"] * 1e3))
                    sys.stderr.write("%s %s %s: %.3f\n" % (key, mesh, strategy, ach / mn))
            notes.append("%s: P = %d, L = %d, h = %d, heads = %d, B = %d, T = %d, %s%s"
                         % (name, model["P"], model["L"], model["h"], model["heads"],
                            BATCH, SEQ, PRECISION,
                            " (gradients reduced in bf16)" if LOWRED else ""))
    table = header + "\n" + "\n".join(rows)
    print(table)
    for n in notes:
        print("\n" + n)

    rev = run(["git", "-C", ROOT, "describe", "--always", "--dirty"]).stdout.strip()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("# Collective bytes vs. the ring analytic minimum (bench/sharding_minimum.py)\n\n")
        f.write("%s, shardc at %s. Bytes per device per step, ring model, MB = 10^6 B. "
                "Formulas: the script's docstring.\n\n"
                % (datetime.date.today().isoformat(), rev or "unknown revision"))
        f.write(table + "\n\n")
        for n in notes:
            f.write("- " + n + "\n")
    sys.stderr.write("wrote %s\n" % args.out)


if __name__ == "__main__":
    main()
