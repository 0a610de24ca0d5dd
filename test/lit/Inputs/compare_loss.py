"""Compares the `loss <x>` lines of two `shardc run` outputs to a relative tolerance."""
import re
import sys

def losses(path):
    with open(path) as f:
        return [float(m.group(1)) for m in re.finditer(r"^loss (\S+)$", f.read(), re.M)]

a, b, rtol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if not a or len(a) != len(b):
    sys.exit(f"loss lines differ in number: {a} vs {b}")
for x, y in zip(a, b):
    rel = abs(x - y) / max(abs(x), abs(y), 1e-30)
    print(f"{x} vs {y}: relative difference {rel:.3e}")
    if rel > rtol:
        sys.exit(f"relative difference {rel:.3e} exceeds {rtol}")
