"""Helpers for init-from.test (run with /usr/bin/python3: numpy + torch).

  init_from.py make OUT [--no-prefix] [--lm-head] [--variant ok|bad-shape|bad-cattn|missing|extra|untied]
      Writes a Hugging Face-style GPT-2 safetensors file for the gpt2-tiny
      preset (hidden 64, 2 layers, 64 positions, vocabulary 50257: unpadded),
      fused attn.c_attn in Conv1D [in, out] layout, the attn.bias /
      attn.masked_bias buffers, random weights at scales where mapping errors
      show in the loss. Written with struct + json only.
  init_from.py reference WEIGHTS TOKENS [--position P]
      Prints `loss X`: the independent PyTorch GPT-2 of test/reference
      (reference_models.GPT2LMHeadModel, float64) on those weights, the
      file's rows as they are (a 50257-way softmax, as Hugging Face computes;
      a padded table counts only its 50257 classes).
  init_from.py make-llama OUT [--rows N] [--inv-freq]
      A Hugging Face LlamaForCausalLM-style file for the llama-tiny preset
      (hidden 64, 2 layers, 4 query / 2 key-value heads, SwiGLU 176): HF
      names, nn.Linear [out, in] weights, an untied lm_head, N vocabulary rows
      (default 50304; fewer are zero-padded by the loader), optionally the
      rotary_emb.inv_freq buffers older HF files carry.
  init_from.py reference-llama WEIGHTS TOKENS [--position P]
      Prints `loss X`: test/reference's LlamaForCausalLM (rotate-half RoPE,
      HF's convention; float64) on those weights, tables padded to 50304 rows.
  init_from.py jsonl LOG KEY [--step N]
      Prints `loss X` from a JSONL log (KEY of the line with "step": N, else the
      last line with KEY).
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

HIDDEN, LAYERS, HEADS, FFN, POSITIONS, VOCAB, PADDED = 64, 2, 4, 256, 64, 50257, 50304
B, T = 4, 32


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def make(args):
    rng = np.random.default_rng(7)
    p = "" if args.no_prefix else "transformer."
    n = lambda *shape, s: (rng.standard_normal(shape) * s).astype(np.float32)
    t = {p + "wte.weight": n(VOCAB, HIDDEN, s=0.3), p + "wpe.weight": n(POSITIONS, HIDDEN, s=0.1)}
    for l in range(LAYERS):
        h = f"{p}h.{l}."
        for ln in ("ln_1", "ln_2"):
            t[h + ln + ".weight"] = 1 + n(HIDDEN, s=0.3)
            t[h + ln + ".bias"] = n(HIDDEN, s=0.1)
        t[h + "attn.c_attn.weight"] = n(HIDDEN, 3 * HIDDEN, s=0.2)
        t[h + "attn.c_attn.bias"] = n(3 * HIDDEN, s=0.1)
        t[h + "attn.c_proj.weight"] = n(HIDDEN, HIDDEN, s=0.1)
        t[h + "attn.c_proj.bias"] = n(HIDDEN, s=0.1)
        t[h + "mlp.c_fc.weight"] = n(HIDDEN, FFN, s=0.15)
        t[h + "mlp.c_fc.bias"] = n(FFN, s=0.1)
        t[h + "mlp.c_proj.weight"] = n(FFN, HIDDEN, s=0.08)
        t[h + "mlp.c_proj.bias"] = n(HIDDEN, s=0.1)
        # HF's causal-mask buffers: not parameters.
        t[h + "attn.bias"] = np.tril(np.ones((POSITIONS, POSITIONS), np.float32))[None, None]
        t[h + "attn.masked_bias"] = np.array(-1e4, np.float32)
    t[p + "ln_f.weight"] = 1 + n(HIDDEN, s=0.3)
    t[p + "ln_f.bias"] = n(HIDDEN, s=0.1)
    if args.lm_head:
        t["lm_head.weight"] = t[p + "wte.weight"]
    if args.variant == "bad-shape":
        t[p + "h.1.mlp.c_fc.weight"] = n(HIDDEN, FFN + 1, s=0.15)
    elif args.variant == "bad-cattn":
        t[p + "h.0.attn.c_attn.weight"] = n(HIDDEN, 3 * HIDDEN - 3, s=0.2)
    elif args.variant == "missing":
        del t[p + "ln_f.bias"]
    elif args.variant == "extra":
        t[p + "h.0.attn.rotary.inv_freq"] = n(8, s=1.0)
    elif args.variant == "untied":
        t["lm_head.weight"] = n(VOCAB, HIDDEN, s=0.3)
    write_safetensors(args.out, t)


LL_KV, LL_FFN, LL_THETA = 2, 176, 10000.0


def make_llama(args):
    rng = np.random.default_rng(11)
    n = lambda *shape, s: (rng.standard_normal(shape) * s).astype(np.float32)
    d = HIDDEN // HEADS
    t = {"model.embed_tokens.weight": n(args.rows, HIDDEN, s=0.3)}
    for l in range(LAYERS):
        h = f"model.layers.{l}."
        t[h + "input_layernorm.weight"] = 1 + n(HIDDEN, s=0.3)
        t[h + "self_attn.q_proj.weight"] = n(HEADS * d, HIDDEN, s=0.25)
        t[h + "self_attn.k_proj.weight"] = n(LL_KV * d, HIDDEN, s=0.25)
        t[h + "self_attn.v_proj.weight"] = n(LL_KV * d, HIDDEN, s=0.2)
        t[h + "self_attn.o_proj.weight"] = n(HIDDEN, HEADS * d, s=0.1)
        t[h + "post_attention_layernorm.weight"] = 1 + n(HIDDEN, s=0.3)
        t[h + "mlp.gate_proj.weight"] = n(LL_FFN, HIDDEN, s=0.15)
        t[h + "mlp.up_proj.weight"] = n(LL_FFN, HIDDEN, s=0.15)
        t[h + "mlp.down_proj.weight"] = n(HIDDEN, LL_FFN, s=0.08)
        if args.inv_freq:
            i = np.arange(d // 2, dtype=np.float64)
            t[h + "self_attn.rotary_emb.inv_freq"] = (LL_THETA ** (-2.0 * i / d)).astype(np.float32)
    t["model.norm.weight"] = 1 + n(HIDDEN, s=0.3)
    t["lm_head.weight"] = n(args.rows, HIDDEN, s=0.2)
    write_safetensors(args.out, t)


def reference_llama(args):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "reference"))
    import torch
    import reference_models as R

    raw = R.read_safetensors(args.weights)
    weights = raw[0] if isinstance(raw, tuple) else raw
    sd = {k: v.to(torch.float64) for k, v in weights.items() if not k.endswith(".inv_freq")}
    for name in ("model.embed_tokens.weight", "lm_head.weight"):
        w = sd[name]
        if w.shape[0] < PADDED:
            sd[name] = torch.cat([w, torch.zeros(PADDED - w.shape[0], w.shape[1], dtype=w.dtype)])
    model = R.LlamaForCausalLM(PADDED, HIDDEN, LAYERS, HEADS, LL_KV, LL_FFN, eps=1e-5,
                               theta=LL_THETA).double()
    model.load_state_dict(sd, strict=True)
    model.classes = VOCAB  # the padding rows are no classes (shardc's loss)
    tokens, targets = R.make_batch(R.read_token_file(args.tokens), args.position, B, T)
    with torch.no_grad():
        loss = model(tokens.long(), targets.long())
    print(f"loss {loss.item():.9f}")


def reference(args):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "reference"))
    import torch
    import reference_models as R

    raw = R.read_safetensors(args.weights)
    weights = raw[0] if isinstance(raw, tuple) else raw
    sd = {}
    for name, value in weights.items():
        value = value.to(torch.float64)
        if name.endswith(".attn.bias") or name.endswith(".attn.masked_bias") or name == "lm_head.weight":
            continue
        name = name if name.startswith("transformer.") else "transformer." + name
        sd[name] = value
    # The file's own rows, as Hugging Face builds it: a 50257-row file is a
    # 50257-way softmax; a padded one (shardc's --save layout) counts only the
    # 50257 classes, as shardc's loss does.
    rows = sd["transformer.wte.weight"].shape[0]
    model = R.GPT2LMHeadModel(rows, POSITIONS, HIDDEN, LAYERS, HEADS, FFN, eps=1e-5).double()
    model.load_state_dict(sd, strict=True)
    model.classes = VOCAB if rows > VOCAB else None
    tokens, targets = R.make_batch(R.read_token_file(args.tokens), args.position, B, T)
    with torch.no_grad():
        loss = model(tokens.long(), targets.long())
    print(f"loss {loss.item():.9f}")


def jsonl(args):
    value = None
    with open(args.log) as f:
        for line in f:
            o = json.loads(line)
            if args.key in o and (args.step is None or o.get("step") == args.step):
                value = o[args.key]
    if value is None:
        sys.exit(f"{args.log}: no '{args.key}'")
    print(f"loss {value}")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("out")
    m.add_argument("--no-prefix", action="store_true")
    m.add_argument("--lm-head", action="store_true")
    m.add_argument("--variant", default="ok",
                   choices=["ok", "bad-shape", "bad-cattn", "missing", "extra", "untied"])
    r = sub.add_parser("reference")
    r.add_argument("weights")
    r.add_argument("tokens")
    r.add_argument("--position", type=int, default=0)
    ml = sub.add_parser("make-llama")
    ml.add_argument("out")
    ml.add_argument("--rows", type=int, default=PADDED)
    ml.add_argument("--inv-freq", action="store_true")
    rl = sub.add_parser("reference-llama")
    rl.add_argument("weights")
    rl.add_argument("tokens")
    rl.add_argument("--position", type=int, default=0)
    j = sub.add_parser("jsonl")
    j.add_argument("log")
    j.add_argument("key")
    j.add_argument("--step", type=int)
    args = ap.parse_args()
    {"make": make, "reference": reference, "make-llama": make_llama,
     "reference-llama": reference_llama, "jsonl": jsonl}[args.cmd](args)


if __name__ == "__main__":
    main()
