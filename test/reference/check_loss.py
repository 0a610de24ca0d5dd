#!/usr/bin/python3
"""Reference test: `shardc run` loss == independent PyTorch loss on the same weights.

  check_loss.py --shardc build/tools/shardc/shardc --preset gpt2-tiny \\
      --data tokens.bin --position 0 --seed 1234 --workdir /tmp/ref --rtol 1e-5

Steps
  1. `shardc gen --preset P [gen args] -o RUNDIR/model.mlir`, where RUNDIR is a
     fresh WORKDIR/run-XXXX (removed after a pass unless --keep)
  2. `shardc run model.mlir --data D --position P --seed S --save RUNDIR/weights.safetensors`
     -> loss of shardc's own initialization ("init" weights).
  3. (--weights random|both) the same names/shapes re-drawn at larger scales
     (random norm scales and biases, logit std ~2; see
     reference_models.randomize_weights), written to RUNDIR/weights-random.safetensors
     and run with `shardc run --load` -> loss on "random" weights. shardc's
     initialization (std 0.02, zero biases, unit norm scales) leaves the loss
     at ~ln(V) where many mapping errors change it by < 1e-5, so the random
     weights are the sensitive part of the test.
  4. The PyTorch model in reference_models.py (written independently: nothing is
     taken from the repository or the .mlir) computes the loss on the same
     weights and batch, in float32 (float64 for --dtype f64 models); the
     float64 loss is reported as well. For BERT the masked-LM batch is re-created
     on the torch side (reference_models.mlm_mask: 15% of positions by
     Philox4x32-10 of (seed, FNV-1a("mlm-mask"), position + i)); --mask-token
     is passed to shardc run when given.

Exit status: 0 all comparisons within --rtol, 1 a mismatch, 2 an error (shardc
failed, bad configuration, ...). With --expect-mismatch (the negative test,
used with --perturb) 0 and 1 swap meaning: every comparison must MISmatch;
errors still exit 2.

Model hyper-parameters that the weights do not reveal (heads, kv heads,
batch B, sequence T, norm epsilon) come from the preset table below plus
the --gen-args overrides; the .mlir is read only to cross-check B, T and
the head count against them (a disagreement is an error).

Run with Debian's /usr/bin/python3 (python3-torch).
"""

import argparse
import math
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import reference_models as R  # noqa: E402

# family, heads, kv_heads, seq T, batch B, norm eps (published shapes; sizes such
# as hidden/layers/vocab are read from the weight shapes instead).
PRESETS = {
    "gpt2-tiny": dict(family="gpt2", heads=4, kv_heads=None, seq=32, batch=4, eps=1e-5),
    "gpt2-124m": dict(family="gpt2", heads=12, kv_heads=None, seq=1024, batch=4, eps=1e-5),
    "gpt2-355m": dict(family="gpt2", heads=16, kv_heads=None, seq=1024, batch=4, eps=1e-5),
    "gpt2-774m": dict(family="gpt2", heads=20, kv_heads=None, seq=1024, batch=4, eps=1e-5),
    "gpt2-1.5b": dict(family="gpt2", heads=25, kv_heads=None, seq=1024, batch=4, eps=1e-5),
    "llama-tiny": dict(family="llama", heads=4, kv_heads=2, seq=32, batch=4, eps=1e-5),
    "llama2-7b": dict(family="llama", heads=32, kv_heads=32, seq=4096, batch=1, eps=1e-5),
    "llama2-13b": dict(family="llama", heads=40, kv_heads=40, seq=4096, batch=1, eps=1e-5),
    "bert-tiny": dict(family="bert", heads=4, kv_heads=None, seq=32, batch=4, eps=1e-12),
    "bert-tiny-preln": dict(family="bert", heads=4, kv_heads=None, seq=32, batch=4, eps=1e-12),
}

DEFAULT_PERTURB_PARAM = {"gpt2": "transformer.ln_f.weight", "llama": "model.norm.weight",
                         "bert": "cls.predictions.transform.LayerNorm.weight"}


class CheckError(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run_cmd(cmd, what):
    log("$ " + " ".join(shlex.quote(c) for c in cmd))
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        raise CheckError(f"{what}: cannot execute {cmd[0]}: {e}")
    dt = time.time() - t0
    out = p.stdout
    if out.strip():
        log("  " + out.rstrip().replace("\n", "\n  "))
    if p.returncode != 0:
        raise CheckError(f"{what} FAILED with exit status {p.returncode}")
    return out, dt


def parse_loss(out):
    losses = re.findall(r"^loss\s+(\S+)\s*$", out, flags=re.M)
    if len(losses) != 1:
        raise CheckError(f"expected exactly one 'loss <value>' line from shardc run, got {len(losses)}")
    try:
        v = float(losses[0])
    except ValueError:
        raise CheckError(f"cannot parse the loss '{losses[0]}'")
    if not math.isfinite(v):
        raise CheckError(f"shardc loss is not finite: {v}")
    return v, losses[0]


def config_from_args(preset, gen_args):
    if preset not in PRESETS:
        raise CheckError(f"no reference configuration for preset '{preset}' "
                         f"(known: {', '.join(sorted(PRESETS))})")
    cfg = dict(PRESETS[preset])
    cfg["dtype"] = "f32"
    cfg["dropout"] = 0.0
    opts = {"--heads": ("heads", int), "--kv-heads": ("kv_heads", int), "--seq": ("seq", int),
            "--batch": ("batch", int), "--norm-eps": ("eps", float), "--dtype": ("dtype", str),
            "--dropout": ("dropout", float)}
    i = 0
    while i < len(gen_args):
        a = gen_args[i]
        key, val = (a.split("=", 1) + [None])[:2] if a.startswith("--") and "=" in a else (a, None)
        if key in opts:
            if val is None:
                i += 1
                if i >= len(gen_args):
                    raise CheckError(f"gen arg {key} needs a value")
                val = gen_args[i]
            name, conv = opts[key]
            cfg[name] = conv(val)
        elif key.startswith("--") and val is None and key not in ("--summary",):
            # size options (--hidden, --layers, --ffn, --vocab, ...) take a value;
            # the reference reads those sizes from the weight shapes.
            i += 1
        i += 1
    if cfg["family"] in ("gpt2", "bert"):
        cfg["kv_heads"] = None
    elif "kv_heads" not in cfg or cfg["kv_heads"] is None:
        cfg["kv_heads"] = cfg["heads"]
    if cfg["dtype"] not in ("f32", "f64"):
        raise CheckError(f"--dtype {cfg['dtype']}: the reference compares f32 and f64 models only")
    if cfg["dropout"] != 0.0:
        log(f"note: --dropout {cfg['dropout']} (shardc run applies dropout only with --train-mode)")
    return cfg


def cross_check_mlir(path, cfg):
    """Sanity check only (the model is not built from the IR): B, T and heads
    agree. Records the model's true vocabulary size in cfg["classes"] (the
    loss leaves a padded vocabulary's padding out, as shardc's does)."""
    with open(path) as f:
        text = f.read()
    cfg["classes"] = R.model_classes(text)
    m = re.search(r"%arg0:\s*tensor<(\d+)x(\d+)xi32>", text)
    if not m:
        raise CheckError(f"{path}: cannot find the tokens argument to cross-check B and T")
    B, T = int(m.group(1)), int(m.group(2))
    if (B, T) != (cfg["batch"], cfg["seq"]):
        raise CheckError(f"config B={cfg['batch']} T={cfg['seq']} disagrees with the model's "
                         f"tokens<{B}x{T}>")
    m = re.search(r"xf\.model = \{[^}]*\bheads = (\d+)", text)
    if m and int(m.group(1)) != cfg["heads"]:
        raise CheckError(f"config heads={cfg['heads']} disagrees with the model's heads={m.group(1)}")


def torch_loss(weights, cfg, inputs, targets, dtype, perturb):
    w = weights
    if perturb is not None:
        name, delta = perturb
        if name not in w:
            raise CheckError(f"--perturb-param {name}: no such parameter")
        w = dict(weights)
        w[name] = weights[name] + delta
    model = R.build_model(w, heads=cfg["heads"], kv_heads=cfg["kv_heads"], eps=cfg["eps"],
                          dtype=dtype, family=cfg["family"], classes=cfg.get("classes"))
    t0 = time.time()
    loss = R.compute_loss(model, inputs, targets)
    return loss, time.time() - t0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Arguments after a lone '--' are passed to shardc gen too.")
    ap.add_argument("--shardc", required=True, help="path to the shardc binary")
    ap.add_argument("--preset", required=True)
    ap.add_argument("--gen-args", default="",
                    help="extra shardc gen options as one shell-quoted string "
                         "(write --gen-args='--seq 64 --batch 2')")
    ap.add_argument("--data", required=True, help="llm.c token file")
    ap.add_argument("--position", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--weights", choices=("init", "random", "both"), default="both",
                    help="compare on shardc's initialization, on re-drawn larger random "
                         "weights loaded with --load, or both (default)")
    ap.add_argument("--random-seed", type=int, default=None,
                    help="seed of the random weights (default: --seed + 1)")
    ap.add_argument("--no-f64", action="store_true",
                    help="skip the additional float64 torch evaluation")
    ap.add_argument("--perturb", type=float, default=None, metavar="DELTA",
                    help="add DELTA to every element of one parameter in the torch model "
                         "only (negative test)")
    ap.add_argument("--perturb-param", default=None,
                    help="parameter to perturb (default: the final norm scale)")
    ap.add_argument("--expect-mismatch", action="store_true",
                    help="invert the verdict: succeed only if every comparison exceeds --rtol")
    ap.add_argument("--mask-token", type=int, default=None,
                    help="BERT: mask id, passed to shardc run --mask-token (default: not "
                         "passed; the torch side then uses the last embedding row, the "
                         "documented default)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the model, weights and random weights after a passing run "
                         "(they are always kept after a failure)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    argv = list(argv)
    extra = []
    if "--" in argv:
        k = argv.index("--")
        argv, extra = argv[:k], argv[k + 1:]
    args = ap.parse_args(argv)
    gen_args = shlex.split(args.gen_args) + extra

    torch.set_num_threads(max(1, args.threads))
    t_start = time.time()
    try:
        return check(args, gen_args, t_start)
    except (CheckError, OSError, ValueError, NotImplementedError) as e:
        log(f"ERROR: {e}")
        return 2


def check(args, gen_args, t_start):
    cfg = config_from_args(args.preset, gen_args)
    os.makedirs(args.workdir, exist_ok=True)
    # A fresh directory per run, so concurrent runs sharing --workdir cannot mix files.
    rundir = tempfile.mkdtemp(prefix="run-", dir=args.workdir)
    rc = 2
    try:
        rc = compare(args, gen_args, cfg, rundir, t_start)
        return rc
    finally:
        if rc == 0 and not args.keep:
            shutil.rmtree(rundir, ignore_errors=True)
        else:
            log(f"files kept in {rundir}")


def compare(args, gen_args, cfg, rundir, t_start):
    mlir = os.path.join(rundir, "model.mlir")
    init_st = os.path.join(rundir, "weights.safetensors")
    rand_st = os.path.join(rundir, "weights-random.safetensors")

    log(f"== {args.preset} {' '.join(gen_args)}  position {args.position} seed {args.seed}")
    run_cmd([args.shardc, "gen", "--preset", args.preset, *gen_args, "-o", mlir], "shardc gen")
    if not os.path.isfile(mlir):
        raise CheckError(f"shardc gen did not write {mlir}")
    cross_check_mlir(mlir, cfg)

    tokens = R.read_token_file(args.data)
    inputs, targets = R.make_batch(tokens, args.position, cfg["batch"], cfg["seq"])
    log(f"batch: B={cfg['batch']} T={cfg['seq']} from {len(tokens)} tokens at position "
        f"{args.position}; heads={cfg['heads']} kv_heads={cfg['kv_heads']} eps={cfg['eps']} "
        f"dtype={cfg['dtype']}")

    common = [args.shardc, "run", mlir, "--data", args.data, "--position", str(args.position),
              "--seed", str(args.seed)]
    if cfg["family"] == "bert" and args.mask_token is not None:
        common += ["--mask-token", str(args.mask_token)]
    out, dt = run_cmd(common + ["--save", init_st], "shardc run --save")
    shardc_init, _ = parse_loss(out)
    log(f"shardc run: {dt:.2f} s")
    init_weights, _ = R.read_safetensors(init_st)
    if not init_weights:
        raise CheckError(f"{init_st} holds no tensors")
    family = R.detect_family(init_weights)
    if family != cfg["family"]:
        raise CheckError(f"weights look like {family}, preset says {cfg['family']}")
    if family == "bert":
        vocab = init_weights["bert.embeddings.word_embeddings.weight"].shape[0]
        mask_token = args.mask_token if args.mask_token is not None else vocab - 1
        inputs, targets = R.mlm_mask(inputs, args.position, args.seed, mask_token)
        n = int((targets != -100).sum())
        log(f"masked LM: {n} of {targets.numel()} positions masked with id {mask_token}")
        if n == 0:
            raise CheckError("no position of this batch is masked; the loss is undefined")

    cases = []
    if args.weights in ("init", "both"):
        cases.append(("init", init_weights, shardc_init))
    if args.weights in ("random", "both"):
        rseed = args.random_seed if args.random_seed is not None else args.seed + 1
        rw = R.randomize_weights(init_weights, rseed, family)
        R.write_safetensors(rand_st, rw, {"random_seed": rseed})
        out, dt = run_cmd(common + ["--load", rand_st], "shardc run --load")
        log(f"shardc run: {dt:.2f} s")
        shardc_rand, _ = parse_loss(out)
        # Read the file back so torch sees exactly the bytes shardc loaded.
        rw, _ = R.read_safetensors(rand_st)
        cases.append((f"random(seed {rseed})", rw, shardc_rand))

    perturb = None
    if args.perturb is not None:
        perturb = (args.perturb_param or DEFAULT_PERTURB_PARAM[family], args.perturb)
        log(f"PERTURBED: torch model uses {perturb[0]} + {perturb[1]:g} (every element)")

    compute = torch.float64 if cfg["dtype"] == "f64" else torch.float32
    verdicts = []
    log("")
    with_f64 = compute != torch.float64 and not args.no_f64
    log(f"{'weights':<18} {'shardc':>12} {'torch ' + str(compute).split('.')[-1]:>16} "
        f"{'rel diff':>10}" + (f"   {'torch float64':>16} {'rel diff':>10}" if with_f64 else ""))
    for name, w, shardc_loss in cases:
        loss, dt = torch_loss(w, cfg, inputs, targets, compute, perturb)
        rel = abs(loss - shardc_loss) / abs(shardc_loss)
        line = f"{name:<18} {shardc_loss:>12.6f} {loss:>16.9f} {rel:>10.3e}"
        if with_f64:
            loss64, dt64 = torch_loss(w, cfg, inputs, targets, torch.float64, perturb)
            rel64 = abs(loss64 - shardc_loss) / abs(shardc_loss)
            line += f"   {loss64:>16.9f} {rel64:>10.3e}"
            dt += dt64
        ok = rel <= args.rtol
        verdicts.append(ok)
        log(line + f"   {'MATCH' if ok else 'MISMATCH'}  (torch {dt:.2f} s)")
        # shardc prints 6 decimals: the rounding alone is up to 5e-7 absolute.
        if 5e-7 / abs(shardc_loss) > args.rtol / 10:
            log(f"warning: loss {shardc_loss} is too small for 6 printed decimals at rtol {args.rtol}")

    log(f"\nrtol {args.rtol:g}; total {time.time() - t_start:.1f} s")
    if args.expect_mismatch:
        if all(not v for v in verdicts):
            log("PASS: every comparison mismatched, as expected (the check is sensitive)")
            return 0
        log("FAIL: expected a mismatch, but the losses agree within rtol")
        return 1
    if all(verdicts):
        log("PASS")
        return 0
    log("FAIL: shardc and the torch reference disagree")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
