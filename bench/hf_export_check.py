"""Loads `shardc export` output with Hugging Face transformers, unchanged, and
compares its loss with the compiled step's own validation loss.

  hf_export_check.py DIR TOKENS [--tolerance R]

DIR holds what scripts/gpu_checks.sh prepare wrote for one model: the export
(model.safetensors + config.json, as `shardc export` writes them), and
expected.json ({"val_loss": L, "batch": B, "seq": T}: the compiled step's
validation loss on the first B*T+1 tokens of TOKENS after its last step).
AutoModelForCausalLM.from_pretrained(DIR) must load the directory without a
warning about missing or unexpected weights, and its loss over the config's
vocabulary (Hugging Face's own softmax, float64 on the CPU, so no TF32 or
kernel choice enters) must equal L within R relative (default 1e-5, fp32).
Prints one line per model; exits 1 on a mismatch. Needs torch + transformers
(the GPU machine has both; this machine has neither transformers nor torch 2).
"""

import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("tokens")
    ap.add_argument("--tolerance", type=float, default=1e-5)
    args = ap.parse_args()

    import torch
    import transformers

    # The token file and the batch layout of the step (llm.c's), as the
    # PyTorch reference reads them.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test",
                                    "reference"))
    import reference_models as R

    expected = json.load(open(os.path.join(args.dir, "expected.json")))
    config = json.load(open(os.path.join(args.dir, "config.json")))
    B, T = expected["batch"], expected["seq"]
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        args.dir, torch_dtype=torch.float32, output_loading_info=True)
    # GPT-2's causal-mask buffers (older transformers list them) are no weights.
    info["missing_keys"] = [k for k in info.get("missing_keys", [])
                            if not k.endswith((".attn.bias", ".attn.masked_bias"))]
    problems = {k: v for k, v in info.items() if v}
    if problems:
        sys.exit(f"{args.dir}: loading reported {problems}")
    model = model.double().eval()
    inputs, targets = R.make_batch(R.read_token_file(args.tokens), 0, B, T)
    with torch.no_grad():
        logits = model(input_ids=inputs.long()).logits
    if logits.shape[-1] != config["vocab_size"]:
        sys.exit(f"{args.dir}: logits have {logits.shape[-1]} columns, "
                 f"config says {config['vocab_size']}")
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             targets.long().reshape(-1)).item()
    rel = abs(loss - expected["val_loss"]) / abs(expected["val_loss"])
    ok = rel <= args.tolerance
    print(f"{'PASS' if ok else 'FAIL'} {config['architectures'][0]} vocab {config['vocab_size']}: "
          f"transformers {transformers.__version__} loss {loss:.9f}, shardc val_loss "
          f"{expected['val_loss']:.9f}, relative difference {rel:.2e} "
          f"(tolerance {args.tolerance:g})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
