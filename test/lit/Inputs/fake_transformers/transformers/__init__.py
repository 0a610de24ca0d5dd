"""A stand-in for Hugging Face transformers, for tools/hf-export-check.test only.

This machine has no transformers (the GPU machine has; the real check runs there):
AutoModelForCausalLM.from_pretrained builds test/reference's independent PyTorch GPT-2
(HF names, fused Conv1D c_attn) or LLaMA (HF names, rotate-half RoPE) from the
directory's config.json and model.safetensors, and reports missing and unexpected weights as transformers does,
so bench/hf_export_check.py's own logic (the batch, the loss, the tolerance, the exit
status) is tested here.
"""
import json
import os
import sys
import types

__version__ = "fake (test/reference)"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "..", "reference"))


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(path, torch_dtype=None, output_loading_info=False):
        import torch
        import reference_models as R

        c = json.load(open(os.path.join(path, "config.json")))
        raw = R.read_safetensors(os.path.join(path, "model.safetensors"))
        weights = raw[0] if isinstance(raw, tuple) else raw
        if c["architectures"] == ["GPT2LMHeadModel"]:
            model = R.GPT2LMHeadModel(c["vocab_size"], c["n_positions"], c["n_embd"],
                                      c["n_layer"], c["n_head"], c["n_inner"],
                                      eps=c["layer_norm_epsilon"])
            sd = {k if k.startswith("transformer.") else "transformer." + k: v
                  for k, v in weights.items()}
        elif c["architectures"] == ["LlamaForCausalLM"]:
            model = R.LlamaForCausalLM(c["vocab_size"], c["hidden_size"], c["num_hidden_layers"],
                                       c["num_attention_heads"], c["num_key_value_heads"],
                                       c["intermediate_size"], eps=c["rms_norm_eps"],
                                       theta=c["rope_theta"])
            sd = dict(weights)
        else:
            raise ValueError(f"fake transformers: no model for {c['architectures']}")
        model = model.to(torch_dtype or torch.float32)
        info = model.load_state_dict(sd, strict=False)
        # GPT-2's causal-mask buffers are ignored on load, as GPT2LMHeadModel's
        # _keys_to_ignore_on_load_unexpected does.
        unexpected = [k for k in info.unexpected_keys
                      if not k.endswith((".attn.bias", ".attn.masked_bias"))]
        loading = {"missing_keys": list(info.missing_keys), "unexpected_keys": unexpected,
                   "mismatched_keys": [], "error_msgs": []}

        class Wrapped(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids):
                return types.SimpleNamespace(logits=self.inner(input_ids))

        wrapped = Wrapped(model)
        return (wrapped, loading) if output_loading_info else wrapped
