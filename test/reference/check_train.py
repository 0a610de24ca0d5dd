#!/usr/bin/python3
"""Reference test: `shardc train` steps == the same steps in PyTorch (torch.optim.AdamW).

  check_train.py --shardc build/tools/shardc/shardc --preset gpt2-tiny \\
      --data tokens.bin --workdir /tmp/train --steps 1            # one step, everything
  check_train.py ... --steps 20 --warmup 5 --micro-batches 2     # loss curve
  check_train.py ... --steps 1 --perturb-lr 1.01 --expect-mismatch  # negative test
  check_train.py --bf16-tracking --shardc ... --data ... --workdir ...
  check_train.py --fp16-overflow --shardc ... --data ... --workdir ...
  check_train.py --self-test                                      # torch side only

Comparison mode (the default; models from `shardc gen --preset P --dropout 0`)
  1. `shardc train model.mlir --data D --steps N --seed S --position P
     --micro-batches k --lr ... (every optimizer option passed explicitly)
     --save-init init.st --save final.st --save-grads grads.st --log-json log.jsonl`
     (--weights random: a re-drawn random parameter set, see
     reference_models.randomize_weights, is written first and passed with --load;
     --save-init must then return it bit for bit).
  2. PyTorch repeats the N steps in float32 from init.st on the same batches:
     the differentiable reference models of reference_models.py, called with
     shardc's parameter names (functional_loss_fn), micro-batch gradients
     accumulated as the mean, clip_grad_norm_ semantics (total norm summed in
     float64), and torch.optim.AdamW with two parameter groups (weight decay
     on the tensors with >= 2 dims only) whose lr is set before every update
     from reference_models.lr_at (linear warmup, then cosine to --min-lr).
     Batches: reference_models.train_batch_positions (step i, micro-batch j at
     P + (i*k + j)*B*T, started modulo n_tokens - B*T as shardc does; --wrap
     zero instead restarts a cursor at token 0 as llm.c); BERT batches are
     masked with mlm_mask(position, seed).
  3. Compared
       every step: loss, lr, grad_norm from the JSON log, relative error <= --loss-rtol
         (default 1e-5 for one step, 1e-4 for several)
       gradients of the first step (grads.st), every tensor:
         max|a-b| / max(max|b|, tiny) <= --rtol (1e-5)
       one step only (N = 1), every updated parameter (final.st):
         (a) against torch.optim.AdamW applied to shardc's own saved gradients
             (the optimizer step in isolation): max|a-b| / max|b| <= --rtol, and
             the update itself max|(a-p0)-(b-p0)| <= --update-rtol * max|b-p0|
             + 2 float32 ulps of max|b| (the update is ~lr, far below the
             parameter, so this is the sensitive check of the step);
         (b) end to end, against torch's step on torch's gradients: per element
             |a-b| <= rtol*max|b| + the gradient tolerance carried through Adam.
             At step 1 AdamW moves an element by lr*g/(|g| + eps/c), so where
             |g| ~ eps (1e-8) a float32 gradient difference far inside the
             gradient tolerance changes the update by up to lr*c/eps times as
             much; a plain rtol on such parameters fails for any float32
             implementation (measured: up to 3e-5 on gpt2-tiny).
     Tensors whose gradient is zero in exact arithmetic (float64 torch gradient
     <= 1e-9 of the largest; GPT-2/BERT key biases, by the shift invariance of
     softmax) are "zero-grad": their float32 gradients are rounding noise, so
     their check is |grad| <= rtol * the largest gradient (and Adam turns the
     noise into steps of up to lr, which (b) allows). A float64 torch run is
     reported next to the float32 one as the scale of float32 rounding
     (--no-f64 skips it for several steps).

Negative tests: --perturb-lr F multiplies the torch learning rate by F (loss and
gradients must still match, the parameters / later losses must not);
--perturb DELTA adds DELTA to one torch parameter (--perturb-param, default the
final norm scale) before training. With --expect-mismatch 0 and 1 swap meaning.

--bf16-tracking (shardc only, no torch): gpt2-tiny trained --steps (200) steps in
fp32 and in bf16 (same seed, data, schedule): the mean loss of the last 20 steps
and the losses at steps N/4, N/2, 3N/4, N of bf16 must be within --tracking-rtol
(2%) of fp32, and both must fall: loss(N) < loss(1) - --min-drop (1.0).

--fp16-overflow (shardc only): --precision fp16 --loss-scale 1e10
--loss-scale-window 3. (a) one step with --save-init/--save: the step is
skipped and the saved parameters equal the initial ones bit for bit; (b)
--steps (40) steps: step 1 skipped; the logged loss_scale follows the dynamic
rule from 1e10 exactly (halve after a skipped step; double after `window`
consecutive clean steps, the count restarting after a skip or a doubling); the
scale doubles at least once; every clean step has a finite loss and grad_norm;
the first clean step uses the lr of update 0 (skipped steps do not advance the
update counter).

Exit status: 0 pass, 1 mismatch, 2 error (shardc failed, bad configuration,
...), as check_loss.py.

Run with Debian's /usr/bin/python3 (python3-torch).
"""

import argparse
import json
import math
import os
import re
import shlex
import shutil
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import reference_models as R  # noqa: E402
from check_loss import (PRESETS, DEFAULT_PERTURB_PARAM, CheckError,  # noqa: E402
                        config_from_args, cross_check_mlir, run_cmd)

ZERO_GRAD_FRACTION = 1e-9  # float64 gradient <= this * largest -> zero in exact arithmetic
SCALE_RTOL = 1e-6          # logged loss scale vs the simulated one (printed digits)
TINY = 1e-30               # denominator floor of the relative errors


def log(msg=""):
    print(msg, flush=True)


def fmt_float(x):
    return repr(float(x))


# --------------------------------------------------------------------------
# shardc train's outputs
# --------------------------------------------------------------------------

_BARE_NONFINITE = re.compile(r'(?<=[:\[,\s])(-?)(inf(?:inity)?|nan)(?=\s*[,}\]])', re.I)


def parse_json_line(line):
    """json.loads, also accepting bare inf / -inf / nan (C printf) as numbers;
    null stays None."""
    try:
        return json.loads(line)
    except ValueError:
        pass

    def rep(m):
        if m.group(2).lower().startswith("nan"):
            return "NaN"
        return m.group(1) + "Infinity"

    return json.loads(_BARE_NONFINITE.sub(rep, line))


def read_log(path, steps):
    if not os.path.isfile(path):
        raise CheckError(f"shardc train did not write the JSON log {path}")
    recs = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = parse_json_line(line)
            except ValueError as e:
                raise CheckError(f"{path}:{n}: not JSON ({e}): {line.strip()[:200]}")
            if not isinstance(rec, dict):
                raise CheckError(f"{path}:{n}: not a JSON object")
            recs.append(rec)
    if len(recs) != steps:
        raise CheckError(f"{path}: {len(recs)} records for {steps} steps")
    for i, rec in enumerate(recs, 1):
        for key in ("step", "loss", "lr", "grad_norm", "skipped"):
            if key not in rec:
                raise CheckError(f"{path}: step {i}: no '{key}'")
        if rec["step"] != i:
            raise CheckError(f"{path}: record {i} has step {rec['step']} (1-based steps expected)")
    return recs


def as_float(v):
    return float("nan") if v is None else float(v)


def read_params(path, what):
    if not os.path.isfile(path):
        raise CheckError(f"shardc train did not write {what} ({path})")
    t, _ = R.read_safetensors(path)
    if not t:
        raise CheckError(f"{path} ({what}) holds no tensors")
    return t


# --------------------------------------------------------------------------
# the PyTorch side
# --------------------------------------------------------------------------

class Hyper:
    """Optimizer / schedule settings shared by shardc train and torch."""

    def __init__(self, lr=1.5e-4, min_lr=1e-5, warmup=0, decay_steps=None, weight_decay=0.01,
                 beta1=0.9, beta2=0.95, adam_eps=1e-8, clip_grad=1.0, micro_batches=1):
        self.lr, self.min_lr, self.warmup = lr, min_lr, warmup
        self.decay_steps = decay_steps
        self.weight_decay, self.beta1, self.beta2 = weight_decay, beta1, beta2
        self.adam_eps, self.clip_grad, self.micro_batches = adam_eps, clip_grad, micro_batches

    def lr_for(self, t, steps):
        d = self.decay_steps if self.decay_steps is not None else steps
        return R.lr_at(t, self.lr, self.min_lr, self.warmup, d)

    def shardc_args(self):
        a = ["--micro-batches", str(self.micro_batches), "--lr", fmt_float(self.lr),
             "--min-lr", fmt_float(self.min_lr), "--warmup", str(self.warmup),
             "--weight-decay", fmt_float(self.weight_decay), "--beta1", fmt_float(self.beta1),
             "--beta2", fmt_float(self.beta2), "--adam-eps", fmt_float(self.adam_eps),
             "--clip-grad", fmt_float(self.clip_grad)]
        if self.decay_steps is not None:
            a += ["--decay-steps", str(self.decay_steps)]
        return a


def torch_train(params0, loss_fn, batches, hp, steps, dtype=torch.float32, lr_factor=1.0,
                optimizer="torch"):
    """Trains a copy of params0 ({name: tensor}) for `steps` updates.

    batches(i) -> [(inputs, targets)] per micro-batch of step i; loss_fn(params,
    inputs, targets) -> scalar. Returns (records, grads of step 1 (mean over
    micro-batches, before clipping), final params); records[i] = dict(loss, lr,
    grad_norm). optimizer="naive" uses naive_adamw_step instead of
    torch.optim.AdamW (self-test)."""
    names = sorted(params0)
    params = {n: params0[n].detach().to(dtype).clone().requires_grad_(True) for n in names}
    plist = [params[n] for n in names]
    decay = [params[n] for n in names if R.is_decayed(n, params[n])]
    no_decay = [params[n] for n in names if not R.is_decayed(n, params[n])]
    if optimizer == "torch":
        groups = [g for g in ({"params": decay, "weight_decay": hp.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}) if g["params"]]
        opt = torch.optim.AdamW(groups, lr=hp.lr, betas=(hp.beta1, hp.beta2), eps=hp.adam_eps)
    else:
        state = {}
    records = []
    grads1 = None
    k = hp.micro_batches
    for t in range(steps):
        for p in plist:
            p.grad = None
        mb = batches(t)
        if len(mb) != k:
            raise CheckError(f"step {t + 1}: {len(mb)} micro-batches, expected {k}")
        losses = []
        for inputs, targets in mb:
            loss = loss_fn(params, inputs, targets)
            (loss / k).backward()
            losses.append(float(loss))
        for p in plist:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        if t == 0:
            grads1 = {n: params[n].grad.detach().clone() for n in names}
        gn = clip_grad_norm(plist, hp.clip_grad)
        lr = hp.lr_for(t, steps) * lr_factor
        if optimizer == "torch":
            for g in opt.param_groups:
                g["lr"] = lr
            opt.step()
        else:
            with torch.no_grad():
                naive_adamw_step(params, state, t, lr, hp)
        records.append({"loss": sum(losses) / k, "lr": lr, "grad_norm": gn,
                        "micro_losses": losses})
    final = {n: params[n].detach().clone() for n in names}
    return records, grads1, final


def clip_grad_norm(plist, max_norm):
    """torch.nn.utils.clip_grad_norm_(plist, max_norm) with the total norm summed
    in float64: torch 1.13's float32 CPU norm is off by ~6e-5 relative on a
    3M-element gradient (the GPT-2 embedding), more than the tolerances here.
    Returns the norm before clipping; max_norm <= 0 only measures."""
    total = math.sqrt(sum(float(torch.sum(p.grad.detach().double() ** 2)) for p in plist))
    if max_norm > 0:
        coef = min(max_norm / (total + 1e-6), 1.0)
        for p in plist:
            p.grad.detach().mul_(coef)
    return total


def naive_adamw_step(params, state, t, lr, hp):
    """Element-wise AdamW (Loshchilov & Hutter, as torch.optim.AdamW), written
    out for the self-test: decay p *= 1 - lr*wd (>= 2-dim tensors), then
    p -= lr * mhat / (sqrt(vhat) + eps) with bias-corrected moments."""
    for n, p in params.items():
        g = p.grad
        m, v = state.get(n, (torch.zeros_like(p), torch.zeros_like(p)))
        m = hp.beta1 * m + (1 - hp.beta1) * g
        v = hp.beta2 * v + (1 - hp.beta2) * g * g
        state[n] = (m, v)
        mhat = m / (1 - hp.beta1 ** (t + 1))
        vhat = v / (1 - hp.beta2 ** (t + 1))
        wd = hp.weight_decay if p.dim() >= 2 else 0.0
        p.copy_(p * (1 - lr * wd) - lr * mhat / (vhat.sqrt() + hp.adam_eps))


# --------------------------------------------------------------------------
# comparisons
# --------------------------------------------------------------------------

def ulp32(x):
    """Spacing of float32 numbers at |x| (x > 0)."""
    x = max(abs(float(x)), 1.1754943508222875e-38)
    return 2.0 ** (math.floor(math.log2(x)) - 23)


def rel_err(a, b):
    """max|a-b| / max(max|b|, TINY), in float64."""
    a = a.double()
    b = b.double()
    if a.shape != b.shape:
        return float("inf")
    if b.numel() == 0:
        return 0.0
    if not torch.isfinite(a).all():
        return float("inf")
    return float((a - b).abs().max()) / max(float(b.abs().max()), TINY)


def bits_equal(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == torch.bfloat16:
        a, b = a.view(torch.int16), b.view(torch.int16)
    return a.contiguous().numpy().tobytes() == b.contiguous().numpy().tobytes()


def scalar_rel(a, b):
    if not (math.isfinite(a) and math.isfinite(b)):
        return float("inf") if a != b else 0.0
    return abs(a - b) / max(abs(b), TINY)


class Verdicts:
    def __init__(self):
        self.groups = {}

    def add(self, group, ok):
        self.groups.setdefault(group, []).append(bool(ok))

    def ok(self, group):
        return all(self.groups.get(group, [True]))

    def all_ok(self):
        return all(all(v) for v in self.groups.values())

    def mismatched(self):
        return sorted(g for g, v in self.groups.items() if not all(v))


def check_names(what, got, ref):
    missing = sorted(set(ref) - set(got))
    extra = sorted(set(got) - set(ref))
    if missing or extra:
        raise CheckError(f"{what}: tensor names differ from the initial parameters: "
                         f"missing {missing[:5]}, extra {extra[:5]}")
    for n in ref:
        if tuple(got[n].shape) != tuple(ref[n].shape):
            raise CheckError(f"{what}: {n} has shape {tuple(got[n].shape)}, "
                             f"expected {tuple(ref[n].shape)}")


def compare_grads(shardc_g, torch_g, g64, rtol, show, verdicts):
    gmax64 = max(float(g.abs().max()) for g in g64.values() if g.numel())
    gmax = max(float(g.abs().max()) for g in torch_g.values() if g.numel())
    zero = {n for n, g in g64.items() if g.numel() and float(g.abs().max()) <= ZERO_GRAD_FRACTION * gmax64}
    rows = []
    for n in sorted(torch_g):
        a, b = shardc_g[n], torch_g[n]
        if n in zero:
            err = float(a.double().abs().max()) / gmax if torch.isfinite(a).all() else float("inf")
            kind = "zero-grad"
        else:
            err = rel_err(a, b)
            kind = ""
        ref = rel_err(b, g64[n]) if n not in zero else float(b.double().abs().max()) / gmax
        rows.append((err, n, float(b.abs().max()), ref, kind))
        verdicts.add("grads", err <= rtol)
    rows.sort(key=lambda r: -r[0] if math.isfinite(r[0]) else -math.inf)
    rows.sort(key=lambda r: 0 if not math.isfinite(r[0]) else 1)
    log(f"\ngradients of step 1 ({len(rows)} tensors; zero-grad: |grad| / largest gradient "
        f"{gmax:.3e}), worst {min(show, len(rows))}:")
    log(f"  {'rel err':>10} {'torch f32 vs f64':>16} {'max|torch|':>11}  tensor")
    for err, n, mb, ref, kind in rows[:show]:
        log(f"  {err:>10.3e} {ref:>16.3e} {mb:>11.3e}  {n}"
            f"{'  [' + kind + ']' if kind else ''}{'' if err <= rtol else '  MISMATCH'}")
    worst = max((r[0] for r in rows), default=0.0)
    return worst, zero


def adamw_on_grads(init_p, grads, hp, lr):
    """One torch.optim.AdamW step (with clipping) from init_p on the given
    gradients: the optimizer step alone, isolated from gradient differences."""
    names = sorted(init_p)
    params = {n: init_p[n].detach().float().clone().requires_grad_(True) for n in names}
    for n in names:
        params[n].grad = grads[n].detach().float().clone()
    plist = [params[n] for n in names]
    clip_grad_norm(plist, hp.clip_grad)
    decay = [params[n] for n in names if R.is_decayed(n, params[n])]
    no_decay = [params[n] for n in names if not R.is_decayed(n, params[n])]
    groups = [g for g in ({"params": decay, "weight_decay": hp.weight_decay},
                          {"params": no_decay, "weight_decay": 0.0}) if g["params"]]
    opt = torch.optim.AdamW(groups, lr=lr, betas=(hp.beta1, hp.beta2), eps=hp.adam_eps)
    opt.step()
    return {n: params[n].detach().clone() for n in names}


def compare_step_params(shardc_p, torch_p, init_p, rtol, update_rtol, show, verdicts):
    """shardc's parameters after step 1 vs torch AdamW applied to shardc's own gradients."""
    rows = []
    worst_p = worst_u = 0.0
    for n in sorted(torch_p):
        a, b, p0 = shardc_p[n].double(), torch_p[n].double(), init_p[n].double()
        finite = bool(torch.isfinite(a).all())
        perr = rel_err(a, b)
        du = float((b - p0).abs().max())
        diff = float((a - b).abs().max()) if finite else float("inf")
        uerr = diff / max(du, TINY)
        ok_p = perr <= rtol
        ok_u = diff <= update_rtol * du + 2 * ulp32(max(float(b.abs().max()), TINY))
        verdicts.add("params", ok_p)
        verdicts.add("updates", ok_u)
        worst_p = max(worst_p, perr)
        worst_u = max(worst_u, uerr)
        rows.append((0 if (ok_p and ok_u) else 1, perr, uerr, n, float(b.abs().max())))
    rows.sort(key=lambda r: (-r[0], -r[1] if math.isfinite(r[1]) else -math.inf))
    log(f"\nparameters after step 1 vs torch AdamW on shardc's gradients ({len(rows)} tensors; "
        f"update err = max|a-b| / max|b-p0|), worst {min(show, len(rows))}:")
    log(f"  {'rel err':>10} {'update err':>10} {'max|torch|':>11}  tensor")
    for bad, perr, uerr, n, mb in rows[:show]:
        log(f"  {perr:>10.3e} {uerr:>10.3e} {mb:>11.3e}  {n}{'  MISMATCH' if bad else ''}")
    return worst_p, worst_u


def compare_e2e_params(shardc_p, torch_p, init_p, torch_g, zero, hp, lr, gnorm, rtol, show,
                       verdicts):
    """shardc's parameters after step 1 vs torch's own step (torch gradients).

    At step 1 AdamW moves each element by lr * g / (|g| + eps/c) (c: the clip
    coefficient), whose slope in g is up to lr*c/eps: an element whose gradient
    is near zero (|g| ~ eps) turns the float32 gradient differences, which the
    gradient check allows up to rtol * max|g| per tensor, into update
    differences far above rtol * max|p|. So each element is held to
    rtol * max|b| + that propagated gradient tolerance (with |g| shrunk by it);
    the result is reported as err / bound <= 1."""
    c = min(hp.clip_grad / (gnorm + 1e-6), 1.0) if hp.clip_grad > 0 else 1.0
    e = hp.adam_eps / c
    gmax = max(float(g.abs().max()) for g in torch_g.values() if g.numel())
    rows = []
    worst_plain = worst_ratio = 0.0
    for n in sorted(torch_p):
        a, b = shardc_p[n].double(), torch_p[n].double()
        g = torch_g[n].double()
        if not bool(torch.isfinite(a).all()):
            ratio = plain = float("inf")
        else:
            dg = rtol * (gmax if n in zero else float(g.abs().max()))
            near = (g.abs() - dg).clamp(min=0.0)
            bound = rtol * float(b.abs().max()) + lr * e * dg / (near + e) ** 2
            bound = bound + 2 * ulp32(max(float(b.abs().max()), TINY))
            ratio = float(((a - b).abs() / bound).max())
            plain = rel_err(a, b)
        verdicts.add("params-e2e", ratio <= 1.0)
        if n not in zero:
            worst_plain = max(worst_plain, plain)
        worst_ratio = max(worst_ratio, ratio)
        rows.append((ratio, plain, n, float(b.abs().max()),
                     "zero-grad" if n in zero else ""))
    rows.sort(key=lambda r: -r[0] if math.isfinite(r[0]) else -math.inf)
    log(f"\nparameters after step 1 vs torch's own step (torch gradients; bound = rtol*max|b| "
        f"+ the gradient tolerance through Adam), worst {min(show, len(rows))}:")
    log(f"  {'err/bound':>10} {'rel err':>10} {'max|torch|':>11}  tensor")
    for ratio, plain, n, mb, kind in rows[:show]:
        log(f"  {ratio:>10.3e} {plain:>10.3e} {mb:>11.3e}  {n}"
            f"{'  [' + kind + ']' if kind else ''}{'  MISMATCH' if ratio > 1 else ''}")
    return worst_plain, worst_ratio


def compare_steps(recs, torch_recs, ref64, tol, verdicts, show_all):
    worst = {"loss": 0.0, "lr": 0.0, "grad_norm": 0.0}
    hdr = (f"  {'step':>4} {'loss shardc':>12} {'loss torch':>12} {'rel':>9}  {'lr rel':>9}"
           f"  {'grad_norm':>10} {'rel':>9}")
    if ref64 is not None:
        hdr += f"  {'torch f32-f64':>13}"
    log("\nper step (loss, lr, grad_norm vs torch float32):")
    log(hdr)
    for i, (s, t) in enumerate(zip(recs, torch_recs)):
        errs = {}
        for key in ("loss", "lr", "grad_norm"):
            errs[key] = scalar_rel(as_float(s[key]), t[key])
            worst[key] = max(worst[key], errs[key])
            verdicts.add(key + ("@1" if i == 0 else ""), errs[key] <= tol)
        if s.get("skipped"):
            verdicts.add("skipped", False)
        bad = any(e > tol for e in errs.values()) or bool(s.get("skipped"))
        if show_all or bad or i < 3 or i == len(recs) - 1:
            line = (f"  {i + 1:>4} {as_float(s['loss']):>12.6f} {t['loss']:>12.6f} "
                    f"{errs['loss']:>9.2e}  {errs['lr']:>9.2e}  {t['grad_norm']:>10.5f} "
                    f"{errs['grad_norm']:>9.2e}")
            if ref64 is not None:
                line += f"  {scalar_rel(t['loss'], ref64[i]['loss']):>13.2e}"
            if s.get("skipped"):
                line += "  SKIPPED (fp32 never skips)"
            log(line + ("  MISMATCH" if bad else ""))
    return worst


# --------------------------------------------------------------------------
# comparison mode
# --------------------------------------------------------------------------

def hyper_from_args(args):
    return Hyper(lr=args.lr, min_lr=args.min_lr, warmup=args.warmup,
                 decay_steps=args.decay_steps, weight_decay=args.weight_decay,
                 beta1=args.beta1, beta2=args.beta2, adam_eps=args.adam_eps,
                 clip_grad=args.clip_grad, micro_batches=args.micro_batches)


def gen_model(args, gen_args, rundir, name="model.mlir"):
    mlir = os.path.join(rundir, name)
    run_cmd([args.shardc, "gen", "--preset", args.preset, *gen_args, "-o", mlir], "shardc gen")
    if not os.path.isfile(mlir):
        raise CheckError(f"shardc gen did not write {mlir}")
    return mlir


def resolve_position(pos, n_tokens):
    """--position -K means K tokens before the end of the file."""
    return n_tokens + pos if pos < 0 else pos


def compare_mode(args, gen_args, rundir, t_start):
    if args.steps < 1:
        raise CheckError("--steps must be >= 1")
    if not any(a == "--dropout" or a.startswith("--dropout=") for a in gen_args):
        gen_args = gen_args + ["--dropout", "0"]
    cfg = config_from_args(args.preset, gen_args)
    if cfg["dropout"] != 0.0:
        raise CheckError("the comparison needs --dropout 0 (dropout masks are not re-created)")
    if cfg["dtype"] != "f32":
        raise CheckError("the training comparison is for f32 models")
    hp = hyper_from_args(args)
    one_step = args.steps == 1
    loss_tol = args.loss_rtol if args.loss_rtol is not None else (args.rtol if one_step else 1e-4)

    mlir = gen_model(args, gen_args, rundir)
    cross_check_mlir(mlir, cfg)
    tokens = R.read_token_file(args.data)
    B, T = cfg["batch"], cfg["seq"]
    position = resolve_position(args.position, len(tokens))
    positions = R.train_batch_positions(position, args.steps, hp.micro_batches, B, T, len(tokens),
                                        args.wrap)
    flat = [p for row in positions for p in row]
    wraps = sum(1 for a, b in zip(flat, flat[1:]) if b != a + B * T)
    first_wrap = next((i for i, row in enumerate(positions)
                       if any(p != position + (i * hp.micro_batches + j) * B * T
                              for j, p in enumerate(row))), None)
    log(f"== train {args.preset} {' '.join(gen_args)}: {args.steps} step(s) x "
        f"{hp.micro_batches} micro-batch(es), B={B} T={T}, position {position} seed {args.seed}"
        f" (batches at {flat[:4]}{' ...' if len(flat) > 4 else ''}; {wraps} wrap(s), --wrap "
        f"{args.wrap}{'' if first_wrap is None else ', first in step ' + str(first_wrap + 1)})")
    log(f"   lr {hp.lr:g} min {hp.min_lr:g} warmup {hp.warmup} decay-steps "
        f"{hp.decay_steps if hp.decay_steps is not None else args.steps} wd {hp.weight_decay:g} "
        f"betas ({hp.beta1:g}, {hp.beta2:g}) eps {hp.adam_eps:g} clip {hp.clip_grad:g}")

    init_st = os.path.join(rundir, "init.safetensors")
    final_st = os.path.join(rundir, "final.safetensors")
    grads_st = os.path.join(rundir, "grads.safetensors")
    log_json = os.path.join(rundir, "log.jsonl")
    cmd = [args.shardc, "train", mlir, "--data", args.data, "--steps", str(args.steps),
           "--seed", str(args.seed), "--position", str(position), *hp.shardc_args(),
           "--precision", "fp32", "--save-init", init_st, "--save", final_st,
           "--save-grads", grads_st, "--log-json", log_json]
    if cfg["family"] == "bert" and args.mask_token is not None:
        cmd += ["--mask-token", str(args.mask_token)]
    loaded = None
    if args.weights == "random":
        # Names and shapes from a 0-step-free source: shardc run --save of the same model.
        probe = os.path.join(rundir, "probe.safetensors")
        run_cmd([args.shardc, "run", mlir, "--data", args.data, "--position", str(flat[0]),
                 "--seed", str(args.seed), "--save", probe]
                + (["--mask-token", str(args.mask_token)]
                   if cfg["family"] == "bert" and args.mask_token is not None else []),
                "shardc run --save (parameter names)")
        w, _ = R.read_safetensors(probe)
        rseed = args.random_seed if args.random_seed is not None else args.seed + 1
        rand_st = os.path.join(rundir, "random.safetensors")
        R.write_safetensors(rand_st, R.randomize_weights(w, rseed), {"random_seed": rseed})
        loaded, _ = R.read_safetensors(rand_st)
        cmd += ["--load", rand_st]
        log(f"random weights (seed {rseed}) loaded with --load")
    out, dt = run_cmd(cmd, "shardc train")
    log(f"shardc train: {dt:.2f} s")

    recs = read_log(log_json, args.steps)
    init_w = read_params(init_st, "--save-init")
    grads_s = read_params(grads_st, "--save-grads")
    final_s = read_params(final_st, "--save")
    family = R.detect_family(init_w)
    if family != cfg["family"]:
        raise CheckError(f"weights look like {family}, preset says {cfg['family']}")
    check_names("--save-grads", grads_s, init_w)
    check_names("--save", final_s, init_w)
    verdicts = Verdicts()
    if loaded is not None:
        check_names("--save-init", init_w, loaded)
        same = all(torch.equal(init_w[n], loaded[n]) for n in loaded)
        log(f"--save-init returns the --load weights bit for bit: {'yes' if same else 'NO'}")
        verdicts.add("init", same)

    mask_token = None
    if family == "bert":
        vocab = init_w["bert.embeddings.word_embeddings.weight"].shape[0]
        mask_token = args.mask_token if args.mask_token is not None else vocab - 1

    def batches(i):
        out = []
        for pos in positions[i]:
            x, y = R.make_batch(tokens, pos, B, T)
            if family == "bert":
                x, y = R.mlm_mask(x, pos, args.seed, mask_token)
                if int((y != -100).sum()) == 0:
                    raise CheckError(f"no position of the batch at {pos} is masked")
            out.append((x, y))
        return out

    w0 = dict(init_w)
    if args.perturb is not None:
        pname = args.perturb_param or DEFAULT_PERTURB_PARAM[family]
        if pname not in w0:
            raise CheckError(f"--perturb-param {pname}: no such parameter")
        w0[pname] = w0[pname] + args.perturb
        log(f"PERTURBED: torch starts from {pname} + {args.perturb:g} (every element)")
    if args.perturb_lr != 1.0:
        log(f"PERTURBED: torch uses lr x {args.perturb_lr:g}")

    def make_loss(dtype):
        return R.functional_loss_fn(w0, heads=cfg["heads"], kv_heads=cfg["kv_heads"],
                                    eps=cfg["eps"], dtype=dtype, family=family,
                                    classes=cfg.get("classes"))

    t0 = time.time()
    trecs, tgrads, tfinal = torch_train(w0, make_loss(torch.float32), batches, hp, args.steps,
                                        torch.float32, args.perturb_lr)
    log(f"torch float32: {time.time() - t0:.2f} s")
    t0 = time.time()
    if one_step or not args.no_f64:
        r64, g64, _ = torch_train(w0, make_loss(torch.float64), batches, hp, args.steps,
                                  torch.float64, args.perturb_lr)
    else:
        r64 = None
        _, g64, _ = torch_train(w0, make_loss(torch.float64), batches, hp, 1, torch.float64,
                                args.perturb_lr)
    log(f"torch float64: {time.time() - t0:.2f} s")

    worst = compare_steps(recs, trecs, r64, loss_tol, verdicts, args.show_steps or one_step)
    worst_g, zero = compare_grads(grads_s, tgrads, g64, args.rtol, args.show, verdicts)
    summary = (f"worst relative errors: loss {worst['loss']:.2e}, lr {worst['lr']:.2e}, "
               f"grad_norm {worst['grad_norm']:.2e} (tol {loss_tol:g}); "
               f"gradients {worst_g:.2e} (rtol {args.rtol:g})")
    if one_step:
        lr0 = hp.lr_for(0, 1) * args.perturb_lr
        own = adamw_on_grads(init_w if args.perturb is None else w0, grads_s, hp, lr0)
        worst_p, worst_u = compare_step_params(final_s, own, init_w, args.rtol, args.update_rtol,
                                               args.show, verdicts)
        plain, ratio = compare_e2e_params(final_s, tfinal, init_w, tgrads, zero, hp, lr0,
                                          trecs[0]["grad_norm"], args.rtol, args.show, verdicts)
        summary += (f"; parameters {worst_p:.2e} (rtol {args.rtol:g}), updates {worst_u:.2e} "
                    f"(tol {args.update_rtol:g} + 2 ulps) on shardc's gradients; end to end "
                    f"{plain:.2e} relative (zero-grad tensors aside), {ratio:.2f} of the propagated "
                    f"bound")
    else:
        for n in final_s:
            verdicts.add("finite", bool(torch.isfinite(final_s[n]).all()))
    if zero:
        summary += f"; zero-grad tensors: {len(zero)}"
    bad_steps = [i for i, (s, t) in enumerate(zip(recs, trecs))
                 if scalar_rel(as_float(s["loss"]), t["loss"]) > loss_tol]
    if bad_steps and first_wrap is not None and bad_steps[0] == first_wrap:
        log(f"\nhint: the losses first disagree in step {first_wrap + 1}, the first step whose "
            f"batch wrapped around the end of the token file (--wrap {args.wrap}: "
            f"{positions[first_wrap]}); shardc may wrap differently (see --wrap)")
    log("\n" + summary)
    log(f"total {time.time() - t_start:.1f} s")
    return verdict(args, verdicts)


def verdict(args, verdicts):
    bad = verdicts.mismatched()
    if args.expect_mismatch:
        # What the perturbation must break, and what it cannot touch (so that a
        # comparison broken for another reason does not pass as "sensitive").
        if args.perturb is not None:
            must_fail, must_pass = ["loss@1"], []
        elif args.steps == 1:
            must_fail, must_pass = ["params", "updates"], ["loss@1", "grad_norm@1", "grads"]
        else:
            must_fail, must_pass = ["loss"], ["loss@1", "grad_norm@1", "grads"]
        not_failed = [g for g in must_fail if verdicts.ok(g)]
        not_passed = [g for g in must_pass if not verdicts.ok(g)]
        if not_failed:
            log(f"FAIL: expected a mismatch in {', '.join(not_failed)}, but shardc and torch "
                f"agree there within the tolerances (mismatched: {', '.join(bad) or 'nothing'})")
            return 1
        if not_passed:
            log(f"FAIL: {', '.join(not_passed)} mismatch although the perturbation cannot "
                f"change them: the comparison is broken, not just sensitive")
            return 1
        log(f"PASS: mismatched as expected ({', '.join(bad)}), the rest agrees: "
            f"the check is sensitive")
        return 0
    if not bad:
        log("PASS")
        return 0
    log(f"FAIL: shardc and the torch reference disagree ({', '.join(bad)})")
    return 1


# --------------------------------------------------------------------------
# precision modes (shardc only)
# --------------------------------------------------------------------------

def precision_common(args, mlir, steps, position):
    hp = hyper_from_args(args)
    return [args.shardc, "train", mlir, "--data", args.data, "--steps", str(steps),
            "--seed", str(args.seed), "--position", str(position), *hp.shardc_args()]


def bf16_tracking(args, gen_args, rundir, t_start):
    if not any(a == "--dropout" or a.startswith("--dropout=") for a in gen_args):
        gen_args = gen_args + ["--dropout", "0"]
    n = args.steps
    if n < 8:
        raise CheckError("--bf16-tracking needs --steps >= 8")
    mlir = gen_model(args, gen_args, rundir)
    tokens = R.read_token_file(args.data)
    position = resolve_position(args.position, len(tokens))
    curves = {}
    for prec in ("fp32", "bf16"):
        path = os.path.join(rundir, f"log-{prec}.jsonl")
        _, dt = run_cmd(precision_common(args, mlir, n, position)
                        + ["--precision", prec, "--log-json", path], f"shardc train --precision {prec}")
        recs = read_log(path, n)
        curves[prec] = [as_float(r["loss"]) for r in recs]
        skipped = [r["step"] for r in recs if r.get("skipped")]
        log(f"{prec}: {dt:.1f} s; losses {curves[prec][0]:.4f} -> {curves[prec][-1]:.4f}"
            f"{'; skipped steps ' + str(skipped[:10]) if skipped else ''}")
        if skipped:
            raise CheckError(f"--precision {prec} skipped steps {skipped[:10]} (only fp16 may skip)")
    f, b = curves["fp32"], curves["bf16"]
    tol = args.tracking_rtol
    ok = True
    marks = sorted({max(1, n * q // 4) for q in (1, 2, 3, 4)})
    log(f"\n  {'':>16} {'fp32':>10} {'bf16':>10} {'rel diff':>9}")
    last = min(20, n)
    rows = [(f"step {s}", f[s - 1], b[s - 1]) for s in marks]
    rows.append((f"mean last {last}", sum(f[-last:]) / last, sum(b[-last:]) / last))
    for name, x, y in rows:
        rel = scalar_rel(y, x)
        good = rel <= tol
        ok &= good
        log(f"  {name:>16} {x:>10.5f} {y:>10.5f} {rel:>9.2e}{'' if good else '  MISMATCH'}")
    for prec, c in curves.items():
        if not all(math.isfinite(x) for x in c):
            log(f"  {prec}: non-finite losses")
            ok = False
        drop = c[0] - c[-1]
        good = drop > args.min_drop
        ok &= good
        log(f"  {prec}: loss step 1 {c[0]:.4f} -> step {n} {c[-1]:.4f} (drop {drop:.3f}, "
            f"need > {args.min_drop:g}){'' if good else '  NOT FALLING ENOUGH'}")
    worst = max(scalar_rel(b[i], f[i]) for i in range(n))
    log(f"\nlargest per-step bf16/fp32 difference over all {n} steps: {worst:.2e} (must be > 0: "
        f"identical curves would mean --precision bf16 was ignored)")
    if not worst > 0:
        ok = False
        log("  MISMATCH: the bf16 losses equal the fp32 ones at every step")
    log(f"total {time.time() - t_start:.1f} s")
    if ok:
        log("PASS")
        return 0
    log(f"FAIL: bf16 does not track fp32 within {tol:g}")
    return 1


def simulate_loss_scale(skipped, init, window):
    """Dynamic loss scaling: the scale used in each step, given which steps were
    skipped: halve after a skipped step; double after `window` consecutive
    clean steps (the count restarts after a skip and after a doubling)."""
    scale, clean, out = init, 0, []
    for s in skipped:
        out.append(scale)
        if s:
            scale /= 2
            clean = 0
        else:
            clean += 1
            if clean == window:
                scale *= 2
                clean = 0
    return out


def fp16_overflow(args, gen_args, rundir, t_start):
    if not any(a == "--dropout" or a.startswith("--dropout=") for a in gen_args):
        gen_args = gen_args + ["--dropout", "0"]
    mlir = gen_model(args, gen_args, rundir)
    tokens = R.read_token_file(args.data)
    position = resolve_position(args.position, len(tokens))
    scale0, window, n = args.loss_scale, args.loss_scale_window, args.steps
    fp16 = ["--precision", "fp16", "--loss-scale", fmt_float(scale0),
            "--loss-scale-window", str(window)]
    problems = []

    # (a) a single skipped step leaves the parameters untouched.
    init_st = os.path.join(rundir, "init.safetensors")
    one_st = os.path.join(rundir, "after-1.safetensors")
    log1 = os.path.join(rundir, "log-1.jsonl")
    run_cmd(precision_common(args, mlir, 1, position) + fp16
            + ["--save-init", init_st, "--save", one_st, "--log-json", log1],
            "shardc train --steps 1 --precision fp16")
    r1 = read_log(log1, 1)[0]
    w0, w1 = read_params(init_st, "--save-init"), read_params(one_st, "--save")
    check_names("--save", w1, w0)
    if not r1["skipped"]:
        problems.append(f"1-step run: step 1 not skipped at loss scale {scale0:g}")
    changed = [k for k in sorted(w0) if not bits_equal(w0[k], w1[k])]
    log(f"1-step run: skipped={r1['skipped']}, loss_scale {r1.get('loss_scale')}, "
        f"{len(changed)} of {len(w0)} tensors changed")
    if changed:
        problems.append(f"a skipped-only run changed {len(changed)} tensors, e.g. {changed[:3]}")

    # (b) the scale dynamics over n steps.
    logn = os.path.join(rundir, f"log-{n}.jsonl")
    run_cmd(precision_common(args, mlir, n, position) + fp16 + ["--log-json", logn],
            f"shardc train --steps {n} --precision fp16")
    recs = read_log(logn, n)
    skipped = [bool(r["skipped"]) for r in recs]
    if any("loss_scale" not in r for r in recs):
        raise CheckError("--precision fp16: the JSON log has no loss_scale")
    scales = [as_float(r["loss_scale"]) for r in recs]
    expect = simulate_loss_scale(skipped, scale0, window)
    hp = hyper_from_args(args)
    log(f"\n  {'step':>4} {'skipped':>7} {'loss_scale':>12} {'expected':>12} {'loss':>10} "
        f"{'grad_norm':>10} {'lr':>10}")
    first_clean = None
    for i, r in enumerate(recs):
        bad = []
        # The log prints 7 significant digits ({:e}); the rule itself is exact.
        if not scalar_rel(scales[i], expect[i]) <= SCALE_RTOL:
            bad.append("scale")
        if not skipped[i]:
            if first_clean is None:
                first_clean = i
            if not math.isfinite(as_float(r["loss"])):
                bad.append("loss not finite")
            if not math.isfinite(as_float(r["grad_norm"])):
                bad.append("grad_norm not finite")
        if bad:
            problems.append(f"step {i + 1}: {', '.join(bad)}")
        log(f"  {i + 1:>4} {str(skipped[i]):>7} {scales[i]:>12.6g} {expect[i]:>12.6g} "
            f"{as_float(r['loss']):>10.5f} {as_float(r['grad_norm']):>10.4g} "
            f"{as_float(r['lr']):>10.4g}{'  ' + ', '.join(bad) if bad else ''}")
    if not skipped[0]:
        problems.append("step 1 not skipped")
    if first_clean is None:
        problems.append(f"every one of the {n} steps was skipped")
    else:
        lr0 = hp.lr_for(0, n)
        got = as_float(recs[first_clean]["lr"])
        if scalar_rel(got, lr0) > 1e-4:
            problems.append(f"first clean step {first_clean + 1} used lr {got:g}, expected "
                            f"{lr0:g} (update 0: skipped steps must not advance the schedule)")
    doublings = sum(1 for a, b in zip(scales, scales[1:]) if scalar_rel(b, 2 * a) <= SCALE_RTOL)
    if doublings == 0:
        problems.append(f"the scale never doubled in {n} steps")
    log(f"\n{sum(skipped)} skipped, {n - sum(skipped)} clean, {doublings} doubling(s); "
        f"total {time.time() - t_start:.1f} s")
    if problems:
        for p in problems:
            log(f"MISMATCH: {p}")
        log("FAIL")
        return 1
    log("PASS")
    return 0


# --------------------------------------------------------------------------
# self-test (torch side only)
# --------------------------------------------------------------------------

def self_test():
    failures = []

    def expect(cond, what):
        log(f"  {'ok  ' if cond else 'FAIL'} {what}")
        if not cond:
            failures.append(what)

    log("self-test: schedule")
    lr, mn = 1.0, 0.1
    expect(R.lr_at(0, lr, mn, 4, 10) == 0.25 and R.lr_at(3, lr, mn, 4, 10) == 1.0,
           "warmup: lr*(t+1)/W")
    expect(R.lr_at(4, lr, mn, 4, 10) == 1.0, "first update after warmup: lr")
    expect(abs(R.lr_at(7, lr, mn, 4, 10) - 0.55) < 1e-15, "cosine midpoint (min+lr)/2")
    expect(R.lr_at(10, lr, mn, 4, 10) == mn and R.lr_at(50, lr, mn, 4, 10) == mn,
           "r clamped to 1 at and after D")
    expect(R.lr_at(5, lr, mn, 4, 4) == lr and R.lr_at(5, lr, mn, 6, 3) == lr, "D <= W: lr")
    expect(R.lr_at(0, lr, mn, 0, 1) == lr, "one step, defaults (W=0, D=N=1): lr")
    expect(abs(Hyper(lr=2.0, min_lr=0.0).lr_for(1, 2) - 1.0) < 1e-15
           and Hyper(lr=2.0, min_lr=0.0, decay_steps=1).lr_for(1, 2) == 0.0, "default D = N")

    log("self-test: batch positions")
    P = R.train_batch_positions
    expect(P(7, 3, 2, 2, 5, 10 ** 6) == [[7, 17], [27, 37], [47, 57]],
           "step i, micro-batch j at P + (i*k+j)*B*T")
    expect(P(650, 5, 1, 1, 100, 1000) == [[650], [750], [850], [0], [100]],
           "wrap to 0 when position + B*T + 1 > n")
    expect(P(899, 2, 1, 1, 100, 1000) == [[899], [0]], "exactly fitting batch is kept")
    expect(P(900, 1, 1, 1, 100, 1000) == [[0]], "first batch wraps too")
    expect(P(650, 5, 1, 1, 100, 1000, "mod") == [[650], [750], [850], [50], [150]]
           and P(650, 2, 2, 1, 100, 1000, "mod") == [[650, 750], [850, 50]],
           "--wrap mod: start modulo n - B*T")
    tok = torch.arange(1000).numpy()
    x, y = R.make_batch(tok, 899, 1, 100)
    expect(int(x[0, 0]) == 899 and int(y[0, -1]) == 999, "make_batch at the last fitting position")

    log("self-test: JSON log")
    r = parse_json_line('{"step": 1, "loss": inf, "grad_norm": nan, "lr": -inf, "skipped": true}')
    expect(r["loss"] == math.inf and math.isnan(r["grad_norm"]) and r["lr"] == -math.inf,
           "bare inf / nan accepted")
    r = parse_json_line('{"step": 2, "loss": Infinity, "grad_norm": null, "lr": 1e-4}')
    expect(r["loss"] == math.inf and math.isnan(as_float(r["grad_norm"])), "Infinity / null")

    log("self-test: dynamic loss scale")
    s = simulate_loss_scale([True, True, False, False, False, False, True, False], 8.0, 3)
    expect(s == [8, 4, 2, 2, 2, 4, 4, 2], f"halve / double after 3 clean ({s})")
    s = simulate_loss_scale([False, False, True, False, False, False], 1.0, 3)
    expect(s == [1, 1, 1, 0.5, 0.5, 0.5], f"a skip restarts the clean count ({s})")

    log("self-test: torch.optim.AdamW + clip loop == naive element-wise AdamW (float64)")
    g = torch.Generator().manual_seed(0)
    toy = {"emb.weight": torch.randn(11, 5, generator=g, dtype=torch.float64),
           "lin.weight": torch.randn(4, 5, generator=g, dtype=torch.float64) * 0.3,
           "lin.bias": torch.randn(4, generator=g, dtype=torch.float64) * 0.1,
           "norm.weight": torch.ones(5, dtype=torch.float64)}

    def toy_loss(p, x, y):
        h = p["emb.weight"][x] * p["norm.weight"]
        return torch.nn.functional.cross_entropy(h @ p["lin.weight"].t() + p["lin.bias"], y)

    data = [(torch.randint(0, 11, (6,), generator=g), torch.randint(0, 4, (6,), generator=g))
            for _ in range(32)]
    for clip in (0.5, 0.0, 100.0):
        hp = Hyper(lr=0.05, min_lr=0.005, warmup=2, decay_steps=6, weight_decay=0.1,
                   clip_grad=clip, micro_batches=2)
        batches = lambda i: [data[2 * i], data[2 * i + 1]]  # noqa: E731
        ra, ga, pa = torch_train(toy, toy_loss, batches, hp, 8, torch.float64)
        # Naive: its own clipping, accumulation and schedule written out here.
        p = {n: t.clone().requires_grad_(True) for n, t in toy.items()}
        state, naive = {}, []
        for t in range(8):
            grads = {n: torch.zeros_like(v) for n, v in p.items()}
            ls = []
            for x, y in batches(t):
                loss = toy_loss(p, x, y)
                gr = torch.autograd.grad(loss, list(p.values()))
                for (n, _), gg in zip(p.items(), gr):
                    grads[n] += gg / 2
                ls.append(float(loss))
            norm = math.sqrt(sum(float((gg * gg).sum()) for gg in grads.values()))
            coef = min(1.0, clip / (norm + 1e-6)) if clip > 0 else 1.0
            if t < 2:
                lr_t = 0.05 * (t + 1) / 2
            else:
                rr = min(max((t - 2) / 4, 0.0), 1.0)
                lr_t = 0.005 + 0.5 * (1 + math.cos(math.pi * rr)) * 0.045
            with torch.no_grad():
                for n, v in p.items():
                    v.grad = grads[n] * coef
                naive_adamw_step(p, state, t, lr_t, hp)
            naive.append((sum(ls) / 2, lr_t, norm))
        perr = max(rel_err(pa[n], p[n].detach()) for n in toy)
        lerr = max(scalar_rel(a["loss"], b[0]) + scalar_rel(a["lr"], b[1])
                   + scalar_rel(a["grad_norm"], b[2]) for a, b in zip(ra, naive))
        clipped = sum(1 for b in naive if clip > 0 and b[2] > clip)
        expect(perr < 1e-12 and lerr < 1e-12,
               f"clip {clip:g} ({clipped} of 8 steps clipped): params {perr:.1e}, "
               f"loss/lr/norm {lerr:.1e}")
    for mx in (0.3, 1e9):
        ps = [torch.randn(7, 3, generator=g, dtype=torch.float64) for _ in range(3)]
        qs = [p.clone() for p in ps]
        for p in ps + qs:
            p.grad = p * 2.5
        n1 = clip_grad_norm(ps, mx)
        n2 = float(torch.nn.utils.clip_grad_norm_(qs, mx))
        expect(abs(n1 - n2) <= 1e-14 * n2 and all(torch.allclose(p.grad, q.grad, rtol=1e-14, atol=0)
                                                    for p, q in zip(ps, qs)),
               f"clip_grad_norm == torch.nn.utils.clip_grad_norm_ (float64, max_norm {mx:g})")
    moved = rel_err(pa["lin.weight"], toy["lin.weight"])
    expect(moved > 1e-3, f"the toy parameters moved ({moved:.2e})")
    expect(all(not R.is_decayed(n, t) for n, t in toy.items() if t.dim() < 2)
           and R.is_decayed("emb.weight", toy["emb.weight"]), "decay only on >= 2-dim tensors")

    log("self-test: differentiable reference models by shardc names")
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 40, (2, 8), generator=gen)
    targets = torch.randint(0, 40, (2, 8), generator=gen)
    gpt = R.GPT2LMHeadModel(48, 16, 16, 2, 4, 24).double()
    llama = R.LlamaForCausalLM(48, 16, 2, 4, 2, 24).double()
    bert = R.BertForMaskedLM(48, 16, 2, 16, 2, 4, 24).double()
    for model, fam, kv, eps in ((gpt, "gpt2", None, 1e-5), (llama, "llama", 2, 1e-5),
                                (bert, "bert", None, 1e-12)):
        torch.manual_seed(2)
        for prm in model.parameters():
            torch.nn.init.normal_(prm, std=0.3)
        sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if fam == "gpt2":  # shardc's names: split q/k/v projections
            w = {}
            for k, v in sd.items():
                if ".attn.c_attn." in k:
                    for i, q in enumerate("qkv"):
                        part = v.chunk(3, dim=-1)[i] if v.dim() == 2 else v.chunk(3)[i]
                        w[k.replace("c_attn", f"{q}_proj")] = part.clone()
                else:
                    w[k] = v
        else:
            w = sd
        y = targets if fam != "bert" else torch.where(targets % 3 == 0, targets,
                                                      torch.full_like(targets, -100))
        fn = R.functional_loss_fn(w, heads=4, kv_heads=kv, eps=eps, dtype=torch.float64,
                                  family=fam)
        leaves = {k: v.clone().requires_grad_(True) for k, v in w.items()}
        loss = fn(leaves, tokens, y)
        loss.backward()
        ref = R.build_model(w, heads=4, kv_heads=kv, eps=eps, dtype=torch.float64, family=fam)
        model.zero_grad()
        lref = model(tokens, y)
        lref.backward()
        grads = {k: p.grad for k, p in model.named_parameters()}
        err = 0.0
        for k, v in leaves.items():
            if fam == "gpt2" and "_proj." in k and ".attn." in k and "c_proj" not in k:
                q = "qkv".index(k.split(".attn.")[1][0])
                fused = grads[k.replace(k.split(".attn.")[1][:6], "c_attn")]
                gref = fused.chunk(3, dim=-1)[q] if fused.dim() == 2 else fused.chunk(3)[q]
            else:
                gref = grads[k]
            err = max(err, rel_err(v.grad, gref))
        same_loss = abs(float(loss) - R.compute_loss(ref, tokens, y)) <= 1e-12 * abs(float(loss))
        expect(same_loss and abs(float(loss) - float(lref)) < 1e-12 and err < 1e-10,
               f"{fam}: loss == compute_loss(build_model), gradients by shardc name == the "
               f"module's ({err:.1e})")

    if failures:
        log(f"self-test FAILED: {len(failures)} check(s)")
        return 1
    log("self-test PASS")
    return 0


# --------------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Arguments after a lone '--' are passed to shardc gen too.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--self-test", action="store_true",
                      help="check the torch side only (optimizer loop, schedule, batch order)")
    mode.add_argument("--bf16-tracking", action="store_true",
                      help="shardc only: bf16 training tracks fp32")
    mode.add_argument("--fp16-overflow", action="store_true",
                      help="shardc only: fp16 dynamic loss scaling on overflow")
    ap.add_argument("--shardc", help="path to the shardc binary")
    ap.add_argument("--preset", default="gpt2-tiny")
    ap.add_argument("--gen-args", default="",
                    help="extra shardc gen options as one shell-quoted string (--dropout 0 "
                         "is added unless given)")
    ap.add_argument("--data", help="llm.c token file")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true", help="keep the files after a pass")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    g = ap.add_argument_group("shardc train options (passed explicitly)")
    g.add_argument("--steps", type=int, default=None,
                   help="default: 1 (comparison), 200 (--bf16-tracking), 40 (--fp16-overflow)")
    g.add_argument("--position", type=int, default=0,
                   help="first token; negative: that many tokens before the end of the file")
    g.add_argument("--seed", type=int, default=1234)
    g.add_argument("--micro-batches", type=int, default=1)
    g.add_argument("--lr", type=float, default=1.5e-4)
    g.add_argument("--min-lr", type=float, default=1e-5)
    g.add_argument("--warmup", type=int, default=0)
    g.add_argument("--decay-steps", type=int, default=None, help="default: not passed (= steps)")
    g.add_argument("--weight-decay", type=float, default=0.01)
    g.add_argument("--beta1", type=float, default=0.9)
    g.add_argument("--beta2", type=float, default=0.95)
    g.add_argument("--adam-eps", type=float, default=1e-8)
    g.add_argument("--clip-grad", type=float, default=1.0)
    g.add_argument("--mask-token", type=int, default=None)
    g.add_argument("--loss-scale", type=float, default=1e10, help="--fp16-overflow")
    g.add_argument("--loss-scale-window", type=int, default=3, help="--fp16-overflow")
    c = ap.add_argument_group("comparison")
    c.add_argument("--weights", choices=("init", "random"), default="init",
                   help="start from shardc's initialization, or from re-drawn random "
                        "weights passed with --load")
    c.add_argument("--random-seed", type=int, default=None)
    c.add_argument("--rtol", type=float, default=1e-5, help="gradients and parameters")
    c.add_argument("--loss-rtol", type=float, default=None,
                   help="loss, lr, grad_norm per step (default: --rtol for one step, 1e-4)")
    c.add_argument("--update-rtol", type=float, default=1e-3,
                   help="one step: the parameter update relative to its size")
    c.add_argument("--wrap", choices=("zero", "mod"), default="mod",
                   help="where a batch that does not fit restarts: 'mod' (shardc's rule, "
                        "runtime/data/TokenFile: start modulo n_tokens - B*T) or 'zero' "
                        "(llm.c: the cursor restarts at token 0)")
    c.add_argument("--no-f64", action="store_true", help="skip the multi-step float64 run")
    c.add_argument("--show", type=int, default=8, help="worst tensors to print")
    c.add_argument("--show-steps", action="store_true", help="print every step")
    c.add_argument("--perturb", type=float, default=None, metavar="DELTA",
                   help="add DELTA to every element of one torch parameter (negative test)")
    c.add_argument("--perturb-param", default=None)
    c.add_argument("--perturb-lr", type=float, default=1.0, metavar="FACTOR",
                   help="multiply the torch lr by FACTOR (negative test)")
    c.add_argument("--expect-mismatch", action="store_true",
                   help="invert the verdict: succeed only if the comparison fails")
    p = ap.add_argument_group("--bf16-tracking")
    p.add_argument("--tracking-rtol", type=float, default=0.02)
    p.add_argument("--min-drop", type=float, default=1.0)
    argv = list(argv)
    extra = []
    if "--" in argv:
        k = argv.index("--")
        argv, extra = argv[:k], argv[k + 1:]
    args = ap.parse_args(argv)
    torch.set_num_threads(max(1, args.threads))
    if args.self_test:
        return self_test()
    missing = [o for o in ("shardc", "data", "workdir") if getattr(args, o) is None]
    if missing:
        ap.error("required: " + ", ".join("--" + m for m in missing))
    if args.steps is None:
        args.steps = 200 if args.bf16_tracking else 40 if args.fp16_overflow else 1
    gen_args = shlex.split(args.gen_args) + extra
    t_start = time.time()
    try:
        if args.preset not in PRESETS:
            raise CheckError(f"no reference configuration for preset '{args.preset}'")
        os.makedirs(args.workdir, exist_ok=True)
        rundir = tempfile.mkdtemp(prefix="run-", dir=args.workdir)
        rc = 2
        try:
            if args.bf16_tracking:
                rc = bf16_tracking(args, gen_args, rundir, t_start)
            elif args.fp16_overflow:
                rc = fp16_overflow(args, gen_args, rundir, t_start)
            else:
                rc = compare_mode(args, gen_args, rundir, t_start)
            return rc
        finally:
            if rc == 0 and not args.keep:
                shutil.rmtree(rundir, ignore_errors=True)
            else:
                log(f"files kept in {rundir}")
    except (CheckError, OSError, ValueError, NotImplementedError, KeyError) as e:
        log(f"ERROR: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
