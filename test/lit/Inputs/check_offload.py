#!/usr/bin/env python3
"""Checks the placement -xf-offload-activations chose in a training step.

usage: check_offload.py STEP.mlir [FUNCTION]

For every `%h = xf.offload %a` in the function: exactly one `xf.reload %h`
reads it, after the offload; the reload's result is read after the reload;
and nothing reads %a after the reload (the backward reads the reload).
Prints the number of offloaded values and the smallest distance (in ops)
between an offload and its reload. Exits 1 naming the first violation.
"""
import re
import sys


def main():
    path = sys.argv[1]
    function = sys.argv[2] if len(sys.argv) > 2 else "train_step"
    lines, inside = [], False
    for line in open(path):
        if line.lstrip().startswith("func.func @"):
            inside = line.lstrip().startswith("func.func @%s(" % function)
            continue
        if inside:
            lines.append(line)
    if not lines:
        sys.exit("no function @%s in %s" % (function, path))
    defs, uses = {}, {}
    for i, line in enumerate(lines):
        m = re.match(r"\s*(%[\w#:]+)\s*=", line)
        if m:
            defs[m.group(1).split(":")[0]] = i
        rhs = line.split("=", 1)[1] if m else line
        for name in re.findall(r"%[\w]+", rhs):
            uses.setdefault(name, []).append(i)
    offloads = [(i, m.group(1), m.group(2)) for i, l in enumerate(lines)
                for m in [re.match(r"\s*(%\w+) = xf\.offload (%\w+)", l)] if m]
    distances = []
    for i, h, a in offloads:
        readers = uses.get(h, [])
        if len(readers) != 1 or "xf.reload" not in lines[readers[0]]:
            sys.exit("%s (offload of %s) is not read by exactly one xf.reload" % (h, a))
        r = readers[0]
        if r <= i:
            sys.exit("the reload of %s comes before its offload" % a)
        back = re.match(r"\s*(%\w+) =", lines[r]).group(1)
        if not any(u > r for u in uses.get(back, [])):
            sys.exit("the reload of %s is never read" % a)
        if any(u > r for u in uses.get(a, [])):
            sys.exit("%s is read after its reload (line %d)" % (a, max(uses[a]) + 1))
        distances.append(r - i)
    print("offloaded %d values, reload distance at least %d ops"
          % (len(offloads), min(distances) if distances else 0))


if __name__ == "__main__":
    main()
