#!/usr/bin/env python3
"""Times torch.nn.functional.scaled_dot_product_attention forward + backward
on the shapes of bench/cuda/attention_bench.cu (causal, bf16, CUDA: S = 1024
and 4096, D = 64 and 128, H = 16, B = 8M / (H S)) and prints the same lines,
human-readable and one JSON line per config ("impl": "torch_sdpa"), for a
like-for-like comparison.

    python3 bench/torch_attention.py [--iters N]

Tensors are allocated BSHD ([B, S, H, D], shardc's layout) and passed to SDPA
as transposed [B, H, S, D] views, as a model would. FLOPs (as
attention_bench.cu): forward 4 B H S^2 D, backward 2.5 x forward, both
halved for causal; forward + backward 3.5 x forward. Exits 77 without
a CUDA device.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    iters = max(1, args.iters)
    warmup = 3

    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        print("no CUDA device: skipping")
        return 77
    dev = torch.device("cuda")
    prop = torch.cuda.get_device_properties(dev)
    print(f"device: {prop.name} (sm_{prop.major}{prop.minor}, {prop.multi_processor_count} SMs), "
          f"{iters} timed iterations after {warmup} warm-up; torch {torch.__version__}")

    def time_ms(fn):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) / iters

    def report(what, B, S, H, D, causal, flops, ms):
        tflops = flops / (ms * 1e-3) / 1e12
        print(f"attention {what:<4} B={B} S={S} H={H} D={D} {'causal' if causal else 'full'} bf16: "
              f"{ms:9.3f} ms {tflops:8.2f} TFLOP/s")
        return tflops

    causal = True
    rows_heads = 8 << 20  # B * H * S per config
    shapes = [(rows_heads // (16 * S), S, 16, D) for S in (1024, 4096) for D in (64, 128)]
    for B, S, H, D in shapes:
        g = torch.Generator(device=dev).manual_seed(1)

        def rand():
            return (torch.rand(B, S, H, D, device=dev, generator=g) * 2 - 1).to(torch.bfloat16)

        q, k, v, dout = rand(), rand(), rand(), rand()
        q.requires_grad_(True)
        k.requires_grad_(True)
        v.requires_grad_(True)
        dout_t = dout.transpose(1, 2)

        def fwd():
            return F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal)

        out = fwd()

        def bwd():
            torch.autograd.grad(out, (q, k, v), dout_t, retain_graph=True)

        def both():
            o = fwd()
            torch.autograd.grad(o, (q, k, v), dout_t)

        for _ in range(warmup):
            both()
            with torch.no_grad():  # the timed forward runs without autograd: warm that path too
                fwd()
        torch.cuda.synchronize()

        fwd_flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        with torch.no_grad():
            fwd_ms = time_ms(fwd)
        bwd_ms, both_ms = time_ms(bwd), time_ms(both)
        result = {"bench": "attention", "impl": "torch_sdpa", "B": B, "S": S, "H": H, "D": D,
                  "causal": causal, "dtype": "bf16",
                  "fwd_ms": round(fwd_ms, 4),
                  "fwd_tflops": round(report("fwd", B, S, H, D, causal, fwd_flops, fwd_ms), 2),
                  "bwd_ms": round(bwd_ms, 4),
                  "bwd_tflops": round(report("bwd", B, S, H, D, causal, 2.5 * fwd_flops, bwd_ms), 2),
                  "fwd_bwd_ms": round(both_ms, 4),
                  "fwd_bwd_tflops": round(report("f+b", B, S, H, D, causal, 3.5 * fwd_flops, both_ms), 2)}
        print(json.dumps(result), flush=True)
        del q, k, v, dout, dout_t, out
    return 0


if __name__ == "__main__":
    sys.exit(main())
