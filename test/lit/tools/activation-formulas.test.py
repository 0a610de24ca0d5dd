"""Checks activation-formulas.test's explain outputs against the formulas."""
import json
import sys

prefix = sys.argv[1]
s, b, h, L = 1024, 1, 1600, 48
cases = [("none", 1, "none1"), ("selective", 1, "sel1"), ("full", 1, "full1"),
         ("selective", 8, "sel8"), ("full", 8, "full8")]
for policy, t, name in cases:
    with open(f"{prefix}.{name}.json") as f:
        r = json.load(f)
    stored = r["stored_activation_bytes"]
    peak = r["memory_bytes"]["activations"]
    formula = 2 * s * b * h * L if policy == "full" else s * b * h * L * (10 + 24 / t)
    ratio = stored / formula
    # shardc's selective replays (and gathers again) more than Megatron's:
    # it may store less.
    low = 0 if policy == "selective" else 0.9
    ok = low <= ratio <= 1.1 and stored <= peak
    print(f"{policy} t={t}: stored/formula {ratio:.3f} {'ok' if ok else 'NOT WITHIN'} "
          f"(stored {stored}, formula {formula:.0f}, peak {peak})")
