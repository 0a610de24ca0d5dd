#!/usr/bin/env python3
"""PyTorch baselines for bench/cuda/linear_ce_bench.cu (fused linear + cross-entropy).

Two implementations of loss = cross_entropy(x @ W^T, targets) and its gradients
dx, dW at the shape of an LM head (bf16, W vocab-major [vocab, hidden]):

  torch_eager        F.linear + F.cross_entropy on the bf16 logits, loss.backward():
                     materialises the [tokens, vocab] logits (and their gradient).
  torch_chunked      a custom autograd.Function that walks chunks of tokens and
                     computes the loss AND both gradients in the forward (Liger-style:
                     logits chunk -> f32 -> softmax - onehot -> dx chunk, dW += ...),
                     the per-chunk math compiled with torch.compile; the backward only
                     scales the stored gradients by grad_output. dW accumulates in bf16
                     across chunks (addmm_), as Liger does.

Output: one line per implementation in the format of linear_ce_bench.cu:

  impl=... tokens=.. hidden=.. vocab=.. dtype=bf16 fwd_ms=.. bwd_ms=.. total_ms=..
  extra_MiB=.. peak_MiB=.. tflops=.. loss=..

peak_MiB is torch.cuda.max_memory_allocated() over the timed steps; extra_MiB is
that minus x, W, targets and the gradients dx, dW (what the loss itself needs).
tflops counts 6 * tokens * hidden * vocab model FLOPs per step. Times are medians
over --iters steps (cudaEvents), after --warmup steps (which include compilation).
Exits 77 without CUDA.
"""

import argparse
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover
    print("torch is not installed: skipping")
    sys.exit(77)

IGNORE_INDEX = -100


def line(impl, a, fwd_ms, bwd_ms, extra_bytes, peak_bytes, loss):
    total = fwd_ms + bwd_ms
    flops = 6.0 * a.tokens * a.hidden * a.vocab
    mib = 1024.0 * 1024.0
    print(
        f"impl={impl} tokens={a.tokens} hidden={a.hidden} vocab={a.vocab} dtype=bf16 "
        f"fwd_ms={fwd_ms:.3f} bwd_ms={bwd_ms:.3f} total_ms={total:.3f} "
        f"extra_MiB={extra_bytes / mib:.1f} peak_MiB={peak_bytes / mib:.1f} "
        f"tflops={flops / (total * 1e-3) / 1e12:.1f} loss={loss:.4f}",
        flush=True,
    )


def eager_loss(x, w, targets):
    logits = F.linear(x, w)  # bf16 [tokens, vocab]
    return F.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX)


@torch.compile(dynamic=False)
def _chunk_loss_grad(xc, w, tc, inv_count):
    """Loss sum and (softmax - onehot) / count of one chunk, f32 math, grad rounded to bf16."""
    logits = (xc @ w.t()).float()
    valid = tc != IGNORE_INDEX
    safe = torch.where(valid, tc, torch.zeros_like(tc))
    lse = torch.logsumexp(logits, dim=-1)
    target = logits.gather(1, safe.unsqueeze(1)).squeeze(1)
    loss = torch.where(valid, lse - target, torch.zeros_like(lse)).sum()
    p = torch.exp(logits - lse.unsqueeze(1))
    onehot = torch.nn.functional.one_hot(safe, logits.shape[1]).to(p.dtype)
    g = torch.where(valid.unsqueeze(1), (p - onehot) * inv_count, torch.zeros_like(p))
    return loss, g.to(xc.dtype)


class ChunkedLinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, targets, chunk):
        count = (targets != IGNORE_INDEX).sum().clamp(min=1).to(torch.float32)
        inv_count = 1.0 / count
        gx = torch.empty_like(x)
        gw = torch.zeros_like(w)
        total = torch.zeros((), dtype=torch.float32, device=x.device)
        for s in range(0, x.shape[0], chunk):
            xc, tc = x[s : s + chunk], targets[s : s + chunk]
            loss_c, g = _chunk_loss_grad(xc, w, tc, inv_count)
            total += loss_c
            torch.mm(g, w, out=gx[s : s + chunk])
            gw.addmm_(g.t(), xc)
        ctx.save_for_backward(gx, gw)
        return total / count

    @staticmethod
    def backward(ctx, grad_out):
        gx, gw = ctx.saved_tensors
        scale = grad_out.to(gx.dtype)
        return gx.mul_(scale), gw.mul_(scale), None, None


def run(impl, step, a, x, w, targets):
    """Times step() (returns (loss, backward_fn)) and measures the memory."""
    for _ in range(a.warmup):
        x.grad = w.grad = None
        loss, bwd = step()
        bwd()
    torch.cuda.synchronize()
    x.grad = w.grad = None
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    fwd, bwd_t = [], []
    value = 0.0
    for _ in range(a.iters):
        x.grad = w.grad = None
        e0.record()
        loss, bwd = step()
        e1.record()
        bwd()
        e2.record()
        torch.cuda.synchronize()
        fwd.append(e0.elapsed_time(e1))
        bwd_t.append(e1.elapsed_time(e2))
        value = loss.item()
    peak = torch.cuda.max_memory_allocated()
    grads = (x.numel() + w.numel()) * x.element_size()
    line(impl, a, statistics.median(fwd), statistics.median(bwd_t), peak - base - grads, peak, value)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--vocab", type=int, default=131072)
    p.add_argument("--chunk", type=int, default=1024, help="tokens per chunk (torch_chunked)")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--impl", choices=["all", "eager", "chunked"], default="all")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: skipping")
        sys.exit(77)

    torch.manual_seed(0)
    dev = "cuda"
    x = (torch.rand(a.tokens, a.hidden, device=dev) * 2 - 1).to(torch.bfloat16).requires_grad_()
    w = ((torch.rand(a.vocab, a.hidden, device=dev) * 2 - 1) * 0.02).to(torch.bfloat16)
    w.requires_grad_()
    targets = torch.randint(0, a.vocab, (a.tokens,), device=dev)

    if a.impl in ("all", "eager"):

        def eager_step():
            loss = eager_loss(x, w, targets)
            return loss, loss.backward

        run("torch_eager", eager_step, a, x, w, targets)

    if a.impl in ("all", "chunked"):

        def chunked_step():
            loss = ChunkedLinearCrossEntropy.apply(x, w, targets, a.chunk)
            return loss, loss.backward

        run("torch_chunked_compile", chunked_step, a, x, w, targets)


if __name__ == "__main__":
    main()
