#!/usr/bin/env python3
"""PyTorch baseline for the GPU benchmark: the GPT-2 that `shardc gen` builds, trained
the way a fast PyTorch user trains it, timed the way bench/gpu_step.sh times shardc.

  python3 bench/torch_gpt2.py --model 124M --batch 64 --steps 30 --warmup-steps 10
  /usr/bin/python3 bench/torch_gpt2.py --model tiny --device cpu --steps 3 --batch 2 --seq 64 --no-compile

The model (written from models/ModelGen.cpp's description, not generated from it):
  * GPT-2 pre-LN: x = wte[tok] + wpe[pos]; per layer x += proj(attn(ln_1(x))),
    x += c_proj(gelu_tanh(c_fc(ln_2(x)))); ln_f; logits = x @ wte^T (tied head);
    loss = mean cross-entropy over every token (no ignored targets).
  * vocabulary 50257 padded to a multiple of 128 (50304): the padded rows are
    ordinary parameters and take part in the softmax, as in shardc;
    learned positions (1024; 64 for tiny); layernorm eps 1e-5; GELU tanh;
    attention scale 1/sqrt(head_dim), causal; dropout 0 (shardc's default).
  * q/k/v are one fused c_attn Linear here (shardc keeps q_proj/k_proj/v_proj:
    c_attn = cat([q, k, v]); the same function and the same parameter count).
  * init: N(0, 0.02) for weights and both embeddings, N(0, 0.02/sqrt(2L)) for the
    two output projections feeding the residual, zero biases, unit norm scales.
  * optimizer = shardc compile's defaults: AdamW lr 1.5e-4, betas (0.9, 0.95),
    eps 1e-8, weight decay 0.01 on matrices and embeddings (not biases or norm
    scales), global-norm clipping at 1.0, lr schedule linear warm-up (0 steps)
    then cosine to 1e-5 at step 1000.
  * bf16: torch.autocast(bfloat16) with fp32 parameters, gradients and Adam
    state (shardc --precision bf16: bf16 GEMM/attention operands, fp32 master
    weights). --dtype fp32 disables autocast.

Speed features (each falls back, saying so, where this torch lacks it):
torch.compile (--no-compile), F.scaled_dot_product_attention restricted to the
flash backend (--attn), AdamW(fused=True) on CUDA, autocast bf16.

Timing: --warmup-steps untimed steps (compilation, autotuning, allocator), then
--steps timed steps; every step ends with loss.item() (a device synchronization,
as the shardc step reads its loss). tokens/s = timed tokens / timed seconds.
MFU = FLOPs/token x tokens/s / peak, FLOPs/token = 6N + 6*L*h*T where N counts
every parameter as shardc's `gen --summary` does (padded vocabulary, position
embeddings included, the tied embedding once) -- the same FLOPs per token for
both implementations, so the MFU ratio equals the tokens/s ratio.

The last line is machine readable:
  RESULT impl=torch model=124M device=NVIDIA_H100_80GB_HBM3 ... tokens_per_s=... mfu=...

--load FILE.safetensors starts from given weights (shardc's names: `shardc run
--save` / `shardc train --save-init`, or `shardc export`'s fused c_attn), so the
first losses can be compared with a shardc step binary (same seed, data, fp32).
"""

import argparse
import contextlib
import inspect
import json
import math
import os
import platform
import resource
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# --------------------------------------------------------------------------
# Configurations (models/ModelGen.cpp presets)
# --------------------------------------------------------------------------

VOCAB = 50257
VOCAB_PAD = 128

CONFIGS = {
    # name: layers, hidden, heads, learned positions, default T
    "tiny": dict(layers=2, hidden=64, heads=4, positions=64, seq=32),
    "4l-256": dict(layers=4, hidden=256, heads=4, positions=1024, seq=256),
    "124M": dict(layers=12, hidden=768, heads=12, positions=1024, seq=1024),
    "355M": dict(layers=24, hidden=1024, heads=16, positions=1024, seq=1024),
    "774M": dict(layers=36, hidden=1280, heads=20, positions=1024, seq=1024),
    "1.5B": dict(layers=48, hidden=1600, heads=25, positions=1024, seq=1024),
}
ALIASES = {"gpt2-tiny": "tiny", "gpt2-124m": "124M", "gpt2-355m": "355M",
           "gpt2-774m": "774M", "gpt2-1.5b": "1.5B", "1p5b": "1.5B", "xl": "1.5B"}


def model_name(s):
    for k in CONFIGS:
        if s.lower() == k.lower():
            return k
    if s.lower() in ALIASES:
        return ALIASES[s.lower()]
    raise argparse.ArgumentTypeError(
        f"unknown model '{s}' (one of {', '.join(CONFIGS)} or shardc preset names)")


def padded_vocab():
    return (VOCAB + VOCAB_PAD - 1) // VOCAB_PAD * VOCAB_PAD


FALLBACKS = []


def note_fallback(msg):
    FALLBACKS.append(msg)
    print(f"fallback: {msg}", flush=True)


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

HAVE_SDPA = hasattr(F, "scaled_dot_product_attention")


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


class Attention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        B, T, H = x.shape
        q, k, v = self.c_attn(x).split(H, dim=2)
        shape = (B, T, self.heads, H // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        if HAVE_SDPA:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # torch < 2.0
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~mask, float("-inf"))
            y = F.softmax(att.float(), dim=-1).to(v.dtype) @ v
        return self.c_proj(y.transpose(1, 2).reshape(B, T, H))


class MLP(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.c_fc = nn.Linear(hidden, 4 * hidden)
        self.c_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        return self.c_proj(gelu_tanh(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, hidden, heads, eps, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=eps)
        self.attn = Attention(hidden, heads)
        self.ln_2 = nn.LayerNorm(hidden, eps=eps)
        self.mlp = MLP(hidden)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.attn(self.ln_1(x)))
        return x + self.drop(self.mlp(self.ln_2(x)))


class GPT2(nn.Module):
    def __init__(self, layers, hidden, heads, positions, eps=1e-5, dropout=0.0):
        super().__init__()
        self.layers = layers
        self.wte = nn.Embedding(padded_vocab(), hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(Block(hidden, heads, eps, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden, eps=eps)

    def init_weights(self, seed):
        dev = self.wte.weight.device
        g = torch.Generator(device=dev).manual_seed(seed)
        std, resid = 0.02, 0.02 / math.sqrt(2 * self.layers)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    p.copy_(torch.randn(p.shape, generator=g, device=dev) * resid)
                elif name.endswith("weight") and p.dim() == 2:  # linears, wte, wpe
                    p.copy_(torch.randn(p.shape, generator=g, device=dev) * std)
                elif name.startswith("ln") or ".ln_" in name:
                    p.fill_(1.0 if name.endswith("weight") else 0.0)
                else:  # biases
                    p.zero_()

    def forward(self, tokens, targets):
        T = tokens.size(1)
        pos = torch.arange(T, device=tokens.device)
        x = self.drop(self.wte(tokens) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied LM head
        # Under CUDA autocast cross_entropy runs in fp32 (autocast's fp32 list).
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


# --------------------------------------------------------------------------
# Weights from shardc (safetensors), data (llm.c token files)
# --------------------------------------------------------------------------

_ST = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I32": np.int32,
       "I64": np.int64}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = blob[8 + n + a:8 + n + b]
        if info["dtype"] == "BF16":
            u = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = u.view(np.float32)
        elif info["dtype"] in _ST:
            arr = np.frombuffer(raw, dtype=_ST[info["dtype"]])
        else:
            raise SystemExit(f"error: {path}: tensor {name} has dtype {info['dtype']}")
        out[name] = torch.from_numpy(arr.astype(np.float32).reshape(info["shape"]))
    return out


def load_shardc_weights(model, path):
    """shardc names (HF GPT-2, Conv1D [in, out]; q/k/v split or c_attn fused)."""
    w = read_safetensors(path)
    used = set()

    def take(name):
        used.add(name)
        return w[name]

    sd = {"wte.weight": take("transformer.wte.weight"),
          "wpe.weight": take("transformer.wpe.weight"),
          "ln_f.weight": take("transformer.ln_f.weight"),
          "ln_f.bias": take("transformer.ln_f.bias")}
    for l in range(model.layers):
        p = f"transformer.h.{l}."
        for ln in ("ln_1", "ln_2"):
            sd[f"h.{l}.{ln}.weight"] = take(p + ln + ".weight")
            sd[f"h.{l}.{ln}.bias"] = take(p + ln + ".bias")
        if p + "attn.c_attn.weight" in w:
            wa, ba = take(p + "attn.c_attn.weight"), take(p + "attn.c_attn.bias")
        else:
            wa = torch.cat([take(p + f"attn.{n}_proj.weight") for n in "qkv"], dim=1)
            ba = torch.cat([take(p + f"attn.{n}_proj.bias") for n in "qkv"], dim=0)
        sd[f"h.{l}.attn.c_attn.weight"], sd[f"h.{l}.attn.c_attn.bias"] = wa.t(), ba
        for mod, names in (("attn", ("c_proj",)), ("mlp", ("c_fc", "c_proj"))):
            for n in names:
                sd[f"h.{l}.{mod}.{n}.weight"] = take(p + f"{mod}.{n}.weight").t()
                sd[f"h.{l}.{mod}.{n}.bias"] = take(p + f"{mod}.{n}.bias")
    unused = sorted(set(w) - used)
    if unused:
        raise SystemExit(f"error: {path}: unused tensors {unused[:4]}...")
    model.load_state_dict({k: v.contiguous() for k, v in sd.items()}, strict=True)


def read_token_file(path):
    """llm.c token file: 256 x int32 header (20240520, version 1, count) + uint16 ids
    (the format of runtime/data/TokenFile.h); llm.c's uint32 variant (20240801,
    version 7) is accepted too."""
    header = np.fromfile(path, dtype="<i4", count=256)
    if len(header) < 256:
        raise SystemExit(f"error: token file '{path}' is shorter than its header")
    magic, version, count = int(header[0]), int(header[1]), int(header[2])
    if (magic, version) == (20240520, 1):
        dtype, width = "<u2", 2
    elif (magic, version) == (20240801, 7):
        dtype, width = "<u4", 4
    else:
        raise SystemExit(f"error: '{path}' is not an llm.c token file "
                         f"(magic {magic}, version {version})")
    size = os.path.getsize(path)
    if size != 1024 + width * count:
        raise SystemExit(f"error: token file '{path}' has {size} bytes, the header says "
                         f"{count} tokens ({1024 + width * count} bytes)")
    return np.memmap(path, dtype=dtype, mode="r", offset=1024, shape=(count,))


class Batches:
    """Step i reads B*T+1 consecutive tokens from position + i*B*T, wrapped as
    shardc's TokenFile::batch: start = position mod (size - B*T)."""

    def __init__(self, tokens, B, T, position, device):
        if len(tokens) < B * T + 1:
            raise SystemExit(f"error: {len(tokens)} tokens; a batch of {B}x{T} "
                             f"needs {B * T + 1}")
        self.tokens, self.B, self.T, self.pos, self.device = tokens, B, T, position, device
        self.pin = device.type == "cuda"

    def next(self):
        n = self.B * self.T
        start = self.pos % (len(self.tokens) - n)
        self.pos += n
        w = torch.from_numpy(np.asarray(self.tokens[start:start + n + 1], dtype=np.int64))
        x, y = w[:-1].view(self.B, self.T), w[1:].view(self.B, self.T)
        if self.pin:
            x, y = x.pin_memory(), y.pin_memory()
        return (x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True))


# --------------------------------------------------------------------------
# Optimizer and schedule (shardc compile's -xf-adamw defaults)
# --------------------------------------------------------------------------

def lr_at(t, lr, min_lr, warmup, decay_steps):
    """Update t (0-based): linear warm-up, then cosine to min_lr at decay_steps."""
    if t < warmup:
        return lr * (t + 1) / warmup
    if decay_steps <= warmup:
        return min_lr
    r = min(max((t - warmup) / (decay_steps - warmup), 0.0), 1.0)
    return min_lr + (lr - min_lr) * (1 + math.cos(math.pi * r)) / 2


def make_optimizer(model, args, device):
    decay = [p for p in model.parameters() if p.dim() >= 2]      # weights, embeddings
    no_decay = [p for p in model.parameters() if p.dim() < 2]    # biases, norm scales
    groups = [{"params": decay, "weight_decay": args.weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    kw = dict(lr=args.lr, betas=(args.beta1, args.beta2), eps=args.adam_eps)
    has_fused = "fused" in inspect.signature(torch.optim.AdamW).parameters
    mode = "foreach"
    if device.type == "cuda" and not args.no_fused_adamw:
        if has_fused:
            kw["fused"] = True
            mode = "fused"
        else:
            note_fallback(f"AdamW(fused=True) unavailable in torch {torch.__version__}; "
                          "foreach AdamW")
    elif device.type != "cuda":
        print("AdamW: fused only on CUDA here; foreach/for-loop AdamW on "
              f"{device.type}", flush=True)
    return torch.optim.AdamW(groups, **kw), mode


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=model_name, default="124M", help="tiny | 124M | 355M | "
                   "774M | 1.5B (or shardc preset names, e.g. gpt2-1.5b)")
    p.add_argument("--batch", type=int, default=None,
                   help="micro-batch B (default: 64 for 124M, 8 for 1.5B, 4 otherwise)")
    p.add_argument("--seq", type=int, default=None, help="T (default: the model's, 1024)")
    p.add_argument("--steps", type=int, default=20, help="timed steps")
    p.add_argument("--warmup-steps", type=int, default=10,
                   help="untimed steps first (compilation, autotuning)")
    p.add_argument("--device", default=None, help="cuda | cpu | cuda:N (default: cuda if "
                   "available)")
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16",
                   help="bf16: autocast with fp32 master weights; fp32: no autocast")
    p.add_argument("--no-compile", action="store_true", help="eager mode")
    p.add_argument("--compile-mode", default=None,
                   help="torch.compile mode (default: torch's default)")
    p.add_argument("--compile-scope", choices=["model", "block"], default="model",
                   help="compile the whole model (default) or each block (faster compile)")
    p.add_argument("--kernels", action="store_true",
                   help="after the warm-up, profile one untimed step and print its top "
                   "CUDA kernels (which attention kernel ran)")
    p.add_argument("--attn", choices=["flash", "auto", "cudnn", "efficient", "math"],
                   default="flash", help="SDPA backend on CUDA (default flash)")
    p.add_argument("--no-fused-adamw", action="store_true")
    p.add_argument("--data", default=None, help="llm.c token file (default: random tokens)")
    p.add_argument("--position", type=int, default=0)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--load", default=None, help="initial weights (safetensors, shardc names)")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=1.5e-4)
    p.add_argument("--min-lr", type=float, default=1e-5)
    p.add_argument("--lr-warmup", type=int, default=0, help="lr warm-up updates "
                   "(shardc --warmup)")
    p.add_argument("--decay-steps", type=int, default=1000)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.95)
    p.add_argument("--adam-eps", type=float, default=1e-8)
    p.add_argument("--clip-grad", type=float, default=1.0)
    p.add_argument("--peak-tflops", type=float, default=989.0,
                   help="dense peak of the device for MFU (H100 SXM bf16: 989)")
    p.add_argument("--json", default=None, help="also write the result as JSON here")
    p.add_argument("--quiet", action="store_true", help="no per-step lines")
    a = p.parse_args(argv)
    cfg = CONFIGS[a.model]
    if a.batch is None:
        a.batch = {"124M": 64, "1.5B": 8}.get(a.model, 4)
    if a.seq is None:
        a.seq = cfg["seq"]
    if a.seq > cfg["positions"]:
        p.error(f"--seq {a.seq} exceeds the {cfg['positions']} learned positions of {a.model}")
    if a.batch < 1 or a.seq < 1 or a.steps < 1 or a.warmup_steps < 0:
        p.error("--batch, --seq, --steps must be >= 1 and --warmup-steps >= 0")
    return a


def device_name(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def sdpa_context(args, device):
    """A context restricting SDPA to one backend on CUDA, or a null context."""
    if not HAVE_SDPA:
        note_fallback(f"F.scaled_dot_product_attention unavailable in torch "
                      f"{torch.__version__}; explicit causal softmax attention")
        return contextlib.nullcontext, "manual"
    if device.type != "cuda" or args.attn == "auto":
        return contextlib.nullcontext, "sdpa-auto"
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        note_fallback("torch.nn.attention.sdpa_kernel unavailable; SDPA picks its backend")
        return contextlib.nullcontext, "sdpa-auto"
    member = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION",
              "efficient": "EFFICIENT_ATTENTION", "math": "MATH"}[args.attn]
    if not hasattr(SDPBackend, member):
        note_fallback(f"SDPBackend.{member} unavailable; SDPA picks its backend")
        return contextlib.nullcontext, "sdpa-auto"
    backend = getattr(SDPBackend, member)
    # Probe: the restricted backend must accept this shape and dtype.
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    cfg = CONFIGS[args.model]
    q = torch.randn(1, cfg["heads"], 128, cfg["hidden"] // cfg["heads"], device=device,
                    dtype=dt)
    try:
        with sdpa_kernel([backend]):
            F.scaled_dot_product_attention(q, q, q, is_causal=True)
        torch.cuda.synchronize(device)
    except RuntimeError as e:
        note_fallback(f"SDPA backend {args.attn} rejected {dt} head_dim "
                      f"{q.size(-1)} ({str(e).splitlines()[0]}); SDPA picks its backend")
        return contextlib.nullcontext, "sdpa-auto"
    return (lambda: sdpa_kernel([backend])), f"sdpa-{args.attn}"


def main(argv=None):
    args = parse_args(argv)
    cfg = CONFIGS[args.model]
    B, T = args.batch, args.seq
    dev = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda but torch.cuda.is_available() is False")
    if dev.type == "cuda" and dev.index is not None:
        torch.cuda.set_device(dev)
    torch.manual_seed(args.seed)
    name = device_name(dev)
    print(f"device: {name} ({dev}), torch {torch.__version__}, python "
          f"{platform.python_version()}", flush=True)

    # Built on the device where torch can (2.0+: no fp32 CPU copy of 1.5B).
    where = dev if hasattr(torch.device, "__enter__") and not args.load else None
    with (where if where is not None else contextlib.nullcontext()):
        model = GPT2(cfg["layers"], cfg["hidden"], cfg["heads"], cfg["positions"],
                     dropout=args.dropout)
    if args.load:
        load_shardc_weights(model, args.load)
    else:
        model.init_weights(args.seed)
    model.to(dev)
    n_params = sum(p.numel() for p in model.parameters())  # tied wte counted once
    flops_per_token = 6 * n_params + 6 * cfg["layers"] * cfg["hidden"] * T
    print(f"model {args.model}: L={cfg['layers']} h={cfg['hidden']} heads={cfg['heads']} "
          f"T={T} B={B} vocab {padded_vocab()} ({VOCAB} padded to {VOCAB_PAD}), "
          f"N={n_params:,} parameters; FLOPs/token 6N + 6LhT = {flops_per_token:.4e}",
          flush=True)

    if args.dtype == "bf16":
        autocast = lambda: torch.autocast(device_type=dev.type, dtype=torch.bfloat16)
    else:
        autocast = contextlib.nullcontext
    attn_ctx, attn_name = sdpa_context(args, dev)
    opt, adamw_mode = make_optimizer(model, args, dev)

    fwd = model
    compiled = "off (--no-compile)"
    if not args.no_compile:
        if hasattr(torch, "compile"):
            kw = {"mode": args.compile_mode} if args.compile_mode else {}
            if args.compile_scope == "model":
                fwd = torch.compile(model, **kw)
            else:
                for block in model.h:
                    block.compile(**kw)
            compiled = f"on (mode {args.compile_mode or 'default'}, {args.compile_scope})"
        else:
            note_fallback(f"torch.compile unavailable in torch {torch.__version__}; eager")
            compiled = "off (unavailable)"
    print(f"features: compile {compiled}, attention {attn_name}, AdamW {adamw_mode}, "
          f"{'autocast bf16, fp32 master weights' if args.dtype == 'bf16' else 'fp32'}",
          flush=True)

    if args.data:
        tokens, source = read_token_file(args.data), args.data
    else:
        rng = np.random.default_rng(args.seed)
        tokens = rng.integers(0, VOCAB, size=max(4 * B * T + 1, 1 << 20), dtype=np.int64)
        source = f"random tokens (seed {args.seed})"
    batches = Batches(tokens, B, T, args.position, dev)
    params = [p for p in model.parameters()]

    def step(t):
        x, y = batches.next()
        with autocast(), attn_ctx():
            loss = fwd(x, y)
        loss.backward()
        norm = (torch.nn.utils.clip_grad_norm_(params, args.clip_grad)
                if args.clip_grad > 0 else torch.zeros(()))
        lr = lr_at(t, args.lr, args.min_lr, args.lr_warmup, args.decay_steps)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.item(), float(norm), lr  # .item(): the step is finished

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def profile_kernels(t):
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step(t)
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15), flush=True)
        names = " ".join(e.key.lower() for e in prof.key_averages())
        print(f"attention kernels: flash={'flash' in names} cudnn={'cudnn' in names} "
              f"efficient={'fmha' in names or 'efficient' in names}", flush=True)

    total = args.warmup_steps + args.steps
    print(f"training {total} steps ({args.warmup_steps} warm-up + {args.steps} timed) of "
          f"{B}x{T} tokens from {source}", flush=True)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    times, losses = [], []
    for i in range(total):
        sync()
        t0 = time.perf_counter()
        loss, norm, lr = step(i)
        dt = time.perf_counter() - t0
        timed = i >= args.warmup_steps
        if args.kernels and dev.type == "cuda" and i + 1 == args.warmup_steps:
            profile_kernels(i)  # an extra, untimed step (shifts the data by one batch)
        if timed:
            times.append(dt)
        losses.append(loss)
        if not math.isfinite(loss):
            raise SystemExit(f"error: loss {loss} at step {i + 1}")
        if not args.quiet:
            print(f"step {i + 1:5d}/{total} | loss {loss:.4f} | lr {lr:.2e} | grad norm "
                  f"{norm:.4f} | {B * T / dt:.0f} tok/s | {dt * 1e3:.1f} ms"
                  f"{'' if timed else ' (warm-up)'}", flush=True)

    secs = sum(times)
    tps = B * T * len(times) / secs
    step_ms = sorted(times)[len(times) // 2] * 1e3
    mfu = flops_per_token * tps / (args.peak_tflops * 1e12)
    if dev.type == "cuda":
        peak_gib = torch.cuda.max_memory_allocated(dev) / 2**30
        reserved_gib = torch.cuda.max_memory_reserved(dev) / 2**30
    else:  # peak RSS of the process, KiB on Linux
        peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        reserved_gib = peak_gib
    print(f"timed: {len(times)} steps in {secs:.3f} s: {tps:.0f} tokens/s, median step "
          f"{step_ms:.1f} ms (mean {secs / len(times) * 1e3:.1f}), MFU {mfu * 100:.2f}% of "
          f"{args.peak_tflops:g} TFLOP/s ({flops_per_token * tps / 1e12:.1f} TFLOP/s)",
          flush=True)
    result = dict(impl="torch", model=args.model, device=name.replace(" ", "_"),
                  batch=B, seq=T, steps=len(times), warmup=args.warmup_steps,
                  tokens_per_s=round(tps, 1), mfu=float(f"{mfu:.4g}"), step_ms=round(step_ms, 2),
                  peak_mem_gib=round(peak_gib, 2), params=n_params,
                  flops_per_token=flops_per_token, peak_tflops=args.peak_tflops,
                  compile=int(not args.no_compile and hasattr(torch, "compile")),
                  attn=attn_name, adamw=adamw_mode, dtype=args.dtype,
                  first_loss=round(losses[0], 6), last_loss=round(losses[-1], 6),
                  torch=torch.__version__, fallbacks=len(FALLBACKS))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(result, reserved_gib=reserved_gib, losses=losses,
                           fallback_notes=FALLBACKS, step_times=times), f, indent=1)
    keys = ["impl", "model", "device", "batch", "seq", "steps", "tokens_per_s", "mfu",
            "step_ms", "peak_mem_gib", "params", "flops_per_token", "peak_tflops", "compile",
            "attn", "adamw", "dtype", "first_loss", "last_loss", "torch", "fallbacks"]
    print("RESULT " + " ".join(f"{k}={result[k]}" for k in keys), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
