#!/usr/bin/env python3
"""Plots training curves from shardc's JSON step logs as an SVG (no plotting
library needed: the standard library writes the SVG).

  scripts/plot_loss.py LOG.jsonl [LOG2.jsonl ...] -o loss.svg
                       [--keys loss,val_loss] [--smooth N] [--log-y] [--title T]

LOG: a JSONL file from `shardc train --log-json` or a compiled step's
`--log-file` (one schema: runtime/program/StepLog.h); every line with a
"step" and a key gives one point. Each (file, key) is one curve; --smooth N
also draws the running mean over N points (curves longer than N). Prints, per curve, the number of
points and the first, last and lowest value. A file without any of the keys
is an error (exit 1).
"""

import argparse
import json
import math
import os
import sys
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"]
W, H = 800, 480
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50


def read_series(path, key):
    points = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_loss: {path}:{n}: not JSON ({e.msg})")
            if not isinstance(o, dict):
                sys.exit(f"plot_loss: {path}:{n}: not a JSON object")
            v, step = o.get(key), o.get("step")
            number = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)
            if number(v) and number(step) and math.isfinite(v):
                points.append((float(step), float(v)))
    return points


def running_mean(points, n):
    out, acc = [], []
    for x, y in points:
        acc.append(y)
        if len(acc) > n:
            acc.pop(0)
        out.append((x, sum(acc) / len(acc)))
    return out


def nice_ticks(lo, hi, count=5):
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    first = math.ceil(lo / step) * step
    ticks, t = [], first
    while t <= hi + 1e-9 * step:
        ticks.append(t)
        t += step
    return ticks


def fmt(v):
    return f"{v:g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.1e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--keys", default="loss,val_loss")
    ap.add_argument("--smooth", type=int, default=0)
    ap.add_argument("--log-y", action="store_true")
    ap.add_argument("--title", default="")
    args = ap.parse_args()
    keys = [k for k in args.keys.split(",") if k]

    curves = []
    for path in args.logs:
        if not os.path.exists(path):
            sys.exit(f"plot_loss: {path}: no such file")
        found = False
        for key in keys:
            pts = read_series(path, key)
            if not pts:
                continue
            found = True
            if args.log_y and min(y for _, y in pts) <= 0:
                sys.exit(f"plot_loss: {path}: '{key}' has values <= 0; drop --log-y")
            label = (os.path.basename(path) + " " if len(args.logs) > 1 else "") + key
            curves.append((label, pts))
            if args.smooth > 1 and len(pts) > args.smooth:
                curves.append((label + f" (mean of {args.smooth})", running_mean(pts, args.smooth)))
        if not found:
            sys.exit(f"plot_loss: {path}: no line has a step and any of: {', '.join(keys)}")

    ty = (lambda y: math.log10(y)) if args.log_y else (lambda y: y)
    xs = [x for _, pts in curves for x, _ in pts]
    ys = [ty(y) for _, pts in curves for _, y in pts]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1
    pad = (y1 - y0) * 0.05 or 0.5
    y0, y1 = y0 - pad, y1 + pad
    px = lambda x: LEFT + (x - x0) / (x1 - x0) * (W - LEFT - RIGHT)
    py = lambda y: TOP + (y1 - y) / (y1 - y0) * (H - TOP - BOTTOM)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>']
    if args.title:
        out.append(f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">{escape(args.title)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" '
               'fill="none" stroke="#444"/>')
    for t in nice_ticks(x0, x1):
        out.append(f'<line x1="{px(t):.1f}" y1="{H - BOTTOM}" x2="{px(t):.1f}" y2="{H - BOTTOM + 5}" stroke="#444"/>')
        out.append(f'<text x="{px(t):.1f}" y="{H - BOTTOM + 18}" text-anchor="middle">{fmt(t)}</text>')
    for t in nice_ticks(y0, y1):
        label = fmt(10 ** t) if args.log_y else fmt(t)
        out.append(f'<line x1="{LEFT}" y1="{py(t):.1f}" x2="{W - RIGHT}" y2="{py(t):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(t) + 4:.1f}" text-anchor="end">{label}</text>')
    out.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 12}" text-anchor="middle">step</text>')
    out.append(f'<text x="16" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(TOP + H - BOTTOM) / 2})">{"/".join(keys)}'
               f'{" (log scale)" if args.log_y else ""}</text>')
    for i, (label, pts) in enumerate(curves):
        color = COLORS[i % len(COLORS)]
        coords = " ".join(f"{px(x):.1f},{py(ty(y)):.1f}" for x, y in pts)
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{coords}">'
                   f'<title>{escape(label)}</title></polyline>')
        ly = TOP + 16 + 16 * i
        out.append(f'<line x1="{W - RIGHT - 190}" y1="{ly - 4}" x2="{W - RIGHT - 170}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{W - RIGHT - 165}" y="{ly}">{escape(label)}</text>')
    out.append("</svg>")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")
    for label, pts in curves:
        ys_ = [y for _, y in pts]
        print(f"{label}: {len(pts)} points, first {ys_[0]:.6g}, last {ys_[-1]:.6g}, "
              f"lowest {min(ys_):.6g} at step {pts[ys_.index(min(ys_))][0]:g}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
