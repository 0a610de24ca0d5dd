"""Independent PyTorch reference implementations of the models `shardc gen` builds.

Nothing here imports from the shardc repository or reads the generated .mlir:
the models are written from the published architectures (HF GPT-2 / nanoGPT,
HF LlamaForCausalLM) and take their weights from the safetensors file that
`shardc run --save` writes, by HF parameter name.

Contents
  * read_safetensors / write_safetensors: a small safetensors reader/writer
    (8-byte little-endian header length, JSON header, raw little-endian data).
  * read_token_file / make_batch: llm.c token files (256 x int32 header:
    magic 20240520, version 1, token count; then uint16 ids) and the llm.c
    batch layout (row b starts at position + b*T; targets are shifted by one).
  * GPT2LMHeadModel: pre-LN GPT-2, fused c_attn (Conv1D layout [in, out]),
    tied LM head over the padded vocabulary.
  * LlamaForCausalLM: RMSNorm, RoPE (rotate-half), grouped-query attention,
    SwiGLU MLP, untied lm_head.
  * BertForMaskedLM: post-LN (original) or pre-LN (Megatron) encoder, MLM head
    tied to the word embeddings; mlm_mask() re-creates shardc run's masking
    (Philox4x32-10 written from the published algorithm).
  * build_model(family, weights, ...): maps shardc's parameter names onto the
    module's state_dict (strict: every module parameter must be provided and
    every saved tensor must be used).

Run with Debian's /usr/bin/python3 (python3-torch).
"""

import json
import math
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# --------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------

_ST_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
_ST_NAMES = {v: k for k, v in _ST_DTYPES.items()}


def read_safetensors(path):
    """Returns (tensors: {name: torch.Tensor}, metadata: dict)."""
    with open(path, "rb") as f:
        blob = bytearray(f.read())  # writable, so torch.frombuffer does not warn
    if len(blob) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (header_len,) = struct.unpack("<Q", blob[:8])
    if 8 + header_len > len(blob):
        raise ValueError(f"{path}: header length {header_len} exceeds the file size")
    header = json.loads(blob[8:8 + header_len].decode("utf-8"))
    data = memoryview(blob)[8 + header_len:]
    metadata = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, info in header.items():
        dtype = _ST_DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {info['dtype']}")
        shape = [int(s) for s in info["shape"]]
        begin, end = (int(o) for o in info["data_offsets"])
        if not 0 <= begin <= end <= len(data):
            raise ValueError(f"{path}: tensor {name}: data_offsets {begin}..{end} out of range")
        numel = int(np.prod(shape)) if shape else 1
        itemsize = torch.empty((), dtype=dtype).element_size()
        if end - begin != numel * itemsize:
            raise ValueError(f"{path}: tensor {name}: {end - begin} bytes for shape {shape} "
                             f"{info['dtype']}")
        if numel == 0:
            t = torch.empty(shape, dtype=dtype)
        else:
            # frombuffer shares memory with `blob`; clone so each tensor owns its data.
            t = torch.frombuffer(data[begin:end], dtype=dtype).clone().reshape(shape)
        tensors[name] = t
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (names sorted, tensors packed in that order)."""
    header = {}
    chunks = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        raw = t.numpy().tobytes() if t.dtype != torch.bfloat16 else \
            t.view(torch.int16).numpy().tobytes()
        header[name] = {"dtype": _ST_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hdr = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hdr += b" " * (-len(hdr) % 8)  # align the data section to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for c in chunks:
            f.write(c)


# --------------------------------------------------------------------------
# llm.c token files
# --------------------------------------------------------------------------

TOKEN_MAGIC = 20240520


def read_token_file(path):
    """Returns the token ids of an llm.c token file as an int64 numpy array."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 256 * 4:
        raise ValueError(f"{path}: too short for an llm.c token file")
    header = np.frombuffer(blob[:256 * 4], dtype="<i4")
    if header[0] != TOKEN_MAGIC:
        raise ValueError(f"{path}: bad magic {header[0]} (expected {TOKEN_MAGIC})")
    if header[1] != 1:
        raise ValueError(f"{path}: unsupported version {header[1]}")
    n = int(header[2])
    body = blob[256 * 4:]
    if len(body) != 2 * n:
        raise ValueError(f"{path}: header says {n} tokens, file holds {len(body) // 2}")
    return np.frombuffer(body, dtype="<u2").astype(np.int64)


def make_batch(tokens, position, B, T):
    """llm.c layout: inputs[b, t] = tokens[position + b*T + t], targets = next token."""
    need = position + B * T + 1
    if position < 0 or need > len(tokens):
        raise ValueError(f"batch at position {position} needs {need} tokens, file has {len(tokens)}")
    buf = torch.from_numpy(np.ascontiguousarray(tokens[position:need]))
    inputs = buf[:-1].reshape(B, T).clone()
    targets = buf[1:].reshape(B, T).clone()
    return inputs, targets


# --------------------------------------------------------------------------
# shared pieces
# --------------------------------------------------------------------------

def gelu_tanh(x):
    """GELU, tanh approximation (GPT-2's 'gelu_new')."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def attention(q, k, v, causal, scale):
    """q: [B, Hq, T, D]; k, v: [B, Hkv, T, D] with Hq a multiple of Hkv.

    Query head h reads key/value head h // (Hq // Hkv)."""
    Hq, Hkv = q.shape[1], k.shape[1]
    if Hq != Hkv:
        rep = Hq // Hkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    if causal:
        T = q.shape[2]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    return torch.matmul(probs, v)


class Conv1D(nn.Module):
    """HF GPT-2 Conv1D: weight [in, out], y = x @ W + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.empty(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(
            *x.shape[:-1], self.weight.shape[1])


# --------------------------------------------------------------------------
# GPT-2
# --------------------------------------------------------------------------

class GPT2Attention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = Conv1D(hidden, 3 * hidden)  # fused [q | k | v], as in HF / nanoGPT
        self.c_proj = Conv1D(hidden, hidden)

    def forward(self, x):
        B, T, H = x.shape
        D = H // self.heads
        q, k, v = self.c_attn(x).split(H, dim=2)
        q = q.view(B, T, self.heads, D).transpose(1, 2)
        k = k.view(B, T, self.heads, D).transpose(1, 2)
        v = v.view(B, T, self.heads, D).transpose(1, 2)
        y = attention(q, k, v, causal=True, scale=1.0 / math.sqrt(D))
        y = y.transpose(1, 2).contiguous().view(B, T, H)
        return self.c_proj(y)


class GPT2MLP(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.c_fc = Conv1D(hidden, ffn)
        self.c_proj = Conv1D(ffn, hidden)

    def forward(self, x):
        return self.c_proj(gelu_tanh(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, hidden, heads, ffn, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=eps)
        self.attn = GPT2Attention(hidden, heads)
        self.ln_2 = nn.LayerNorm(hidden, eps=eps)
        self.mlp = GPT2MLP(hidden, ffn)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT2Model(nn.Module):
    def __init__(self, vocab, positions, hidden, layers, heads, ffn, eps):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(positions, hidden)
        self.h = nn.ModuleList([GPT2Block(hidden, heads, ffn, eps) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden, eps=eps)

    def forward(self, tokens):
        T = tokens.shape[1]
        pos = torch.arange(T, dtype=torch.long)
        x = self.wte(tokens) + self.wpe(pos)[None]
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


def masked_cross_entropy(logits, targets, classes=None):
    """Mean token cross-entropy (ignore_index -100). With `classes` (the true
    vocabulary of a padded one) the padding columns are no classes: the
    softmax runs over the first `classes` logits only."""
    if classes is not None:
        logits = logits[..., :classes]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=-100, reduction="mean")


def model_classes(mlir_text):
    """The classes of the model's loss (`xf.cross_entropy ... classes = N`:
    the true vocabulary of a padded one), or None if its loss has none."""
    import re
    m = re.search(r"xf\.(?:linear_)?cross_entropy\b[^\n]*\bclasses = (\d+)", mlir_text)
    return int(m.group(1)) if m else None


class GPT2LMHeadModel(nn.Module):
    """Pre-LN GPT-2 with the LM head tied to wte (logits over every padded row)."""

    family = "gpt2"

    def __init__(self, vocab, positions, hidden, layers, heads, ffn, eps=1e-5):
        super().__init__()
        self.classes = None  # the true vocabulary of a padded one (build_model)
        self.transformer = GPT2Model(vocab, positions, hidden, layers, heads, ffn, eps)

    def forward(self, tokens, targets=None):
        x = self.transformer(tokens)
        logits = torch.matmul(x, self.transformer.wte.weight.t())
        if targets is None:
            return logits
        return masked_cross_entropy(logits, targets, self.classes)


def gpt2_state_dict(weights):
    """shardc/HF names with split q/k/v -> this module's state_dict (fused c_attn)."""
    sd = {}
    used = set()

    def take(name):
        used.add(name)
        return weights[name]

    layers = 0
    while f"transformer.h.{layers}.ln_1.weight" in weights:
        layers += 1
    for name in ("transformer.wte.weight", "transformer.wpe.weight",
                 "transformer.ln_f.weight", "transformer.ln_f.bias"):
        sd[name] = take(name)
    for l in range(layers):
        p = f"transformer.h.{l}."
        for n in ("ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias",
                  "attn.c_proj.weight", "attn.c_proj.bias",
                  "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias"):
            sd[p + n] = take(p + n)
        # HF GPT-2's c_attn.weight is [H, 3H] = cat([Wq, Wk, Wv], dim=1) (Conv1D layout).
        sd[p + "attn.c_attn.weight"] = torch.cat(
            [take(p + f"attn.{x}_proj.weight") for x in "qkv"], dim=1)
        sd[p + "attn.c_attn.bias"] = torch.cat(
            [take(p + f"attn.{x}_proj.bias") for x in "qkv"], dim=0)
    return sd, used, layers


# --------------------------------------------------------------------------
# LLaMA
# --------------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(hidden))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(T, D, theta, dtype):
    """cos/sin [T, D] for the rotate-half convention (computed in float64)."""
    i = torch.arange(D // 2, dtype=torch.float64)
    freq = theta ** (-2.0 * i / D)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * freq[None, :]
    angle = torch.cat([angle, angle], dim=-1)
    return angle.cos().to(dtype), angle.sin().to(dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat([-x2, x1], dim=-1)


def apply_rope(x, cos, sin):
    """x: [B, heads, T, D]; out[i] = x[i] cos - x[i+D/2] sin, out[i+D/2] = x[i+D/2] cos + x[i] sin."""
    return x * cos + rotate_half(x) * sin


class LlamaAttention(nn.Module):
    def __init__(self, hidden, heads, kv_heads, theta):
        super().__init__()
        self.heads, self.kv_heads, self.theta = heads, kv_heads, theta
        self.head_dim = hidden // heads
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        D = self.head_dim
        q = self.q_proj(x).view(B, T, self.heads, D).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv_heads, D).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, D).transpose(1, 2)
        cos, sin = rope_tables(T, D, self.theta, x.dtype)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        y = attention(q, k, v, causal=True, scale=1.0 / math.sqrt(D))
        y = y.transpose(1, 2).contiguous().view(B, T, self.heads * D)
        return self.o_proj(y)


class LlamaMLP(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, ffn, bias=False)
        self.up_proj = nn.Linear(hidden, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, hidden, heads, kv_heads, ffn, eps, theta):
        super().__init__()
        self.input_layernorm = RMSNorm(hidden, eps)
        self.self_attn = LlamaAttention(hidden, heads, kv_heads, theta)
        self.post_attention_layernorm = RMSNorm(hidden, eps)
        self.mlp = LlamaMLP(hidden, ffn)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x


class LlamaModel(nn.Module):
    def __init__(self, vocab, hidden, layers, heads, kv_heads, ffn, eps, theta):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(
            [LlamaDecoderLayer(hidden, heads, kv_heads, ffn, eps, theta) for _ in range(layers)])
        self.norm = RMSNorm(hidden, eps)

    def forward(self, tokens):
        x = self.embed_tokens(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    family = "llama"

    def __init__(self, vocab, hidden, layers, heads, kv_heads, ffn, eps=1e-5, theta=10000.0):
        super().__init__()
        self.classes = None  # the true vocabulary of a padded one (build_model)
        self.model = LlamaModel(vocab, hidden, layers, heads, kv_heads, ffn, eps, theta)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, tokens, targets=None):
        logits = self.lm_head(self.model(tokens))
        if targets is None:
            return logits
        return masked_cross_entropy(logits, targets, self.classes)


# --------------------------------------------------------------------------
# BERT (masked LM)
# --------------------------------------------------------------------------

class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def forward(self, x):
        B, T, H = x.shape
        D = H // self.heads
        q = self.query(x).view(B, T, self.heads, D).transpose(1, 2)
        k = self.key(x).view(B, T, self.heads, D).transpose(1, 2)
        v = self.value(x).view(B, T, self.heads, D).transpose(1, 2)
        y = attention(q, k, v, causal=False, scale=1.0 / math.sqrt(D))
        return y.transpose(1, 2).contiguous().view(B, T, H)


class BertSelfOutput(nn.Module):
    def __init__(self, hidden, eps, pre_ln):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        if not pre_ln:
            self.LayerNorm = nn.LayerNorm(hidden, eps=eps)


class BertAttention(nn.Module):
    def __init__(self, hidden, heads, eps, pre_ln):
        super().__init__()
        if pre_ln:
            self.ln = nn.LayerNorm(hidden, eps=eps)
        self.self = BertSelfAttention(hidden, heads)
        self.output = BertSelfOutput(hidden, eps, pre_ln)


class BertIntermediate(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.dense = nn.Linear(hidden, ffn)


class BertOutput(nn.Module):
    def __init__(self, hidden, ffn, eps, pre_ln):
        super().__init__()
        self.dense = nn.Linear(ffn, hidden)
        if not pre_ln:
            self.LayerNorm = nn.LayerNorm(hidden, eps=eps)


class BertPreLNMlp(nn.Module):
    """Holds only the pre-LN block's MLP LayerNorm (shardc name ...mlp.ln)."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=eps)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn, eps, pre_ln):
        super().__init__()
        self.pre_ln = pre_ln
        self.attention = BertAttention(hidden, heads, eps, pre_ln)
        self.intermediate = BertIntermediate(hidden, ffn)
        self.output = BertOutput(hidden, ffn, eps, pre_ln)
        if pre_ln:
            self.mlp = BertPreLNMlp(hidden, eps)

    def forward(self, x):
        att = self.attention
        if self.pre_ln:
            # Megatron pre-LN block: x + f(LN(x)), no LayerNorm on the residual stream.
            x = x + att.output.dense(att.self(att.ln(x)))
            x = x + self.output.dense(gelu_tanh(self.intermediate.dense(self.mlp.ln(x))))
        else:
            # Original post-LN block: LN(x + f(x)).
            x = att.output.LayerNorm(x + att.output.dense(att.self(x)))
            x = self.output.LayerNorm(
                x + self.output.dense(gelu_tanh(self.intermediate.dense(x))))
        return x


class BertEmbeddings(nn.Module):
    def __init__(self, vocab, positions, types, hidden, eps, pre_ln):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(positions, hidden)
        self.token_type_embeddings = nn.Embedding(types, hidden)
        self.pre_ln = pre_ln
        if not pre_ln:
            self.LayerNorm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, tokens, token_types):
        T = tokens.shape[1]
        pos = torch.arange(T, dtype=torch.long)
        x = (self.word_embeddings(tokens) + self.position_embeddings(pos)[None]
             + self.token_type_embeddings(token_types))
        return x if self.pre_ln else self.LayerNorm(x)


class BertEncoder(nn.Module):
    def __init__(self, hidden, layers, heads, ffn, eps, pre_ln):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(hidden, heads, ffn, eps, pre_ln)
                                    for _ in range(layers)])
        if pre_ln:
            self.final_layernorm = nn.LayerNorm(hidden, eps=eps)
        self.pre_ln = pre_ln

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return self.final_layernorm(x) if self.pre_ln else x


class BertModel(nn.Module):
    def __init__(self, vocab, positions, types, hidden, layers, heads, ffn, eps, pre_ln):
        super().__init__()
        self.embeddings = BertEmbeddings(vocab, positions, types, hidden, eps, pre_ln)
        self.encoder = BertEncoder(hidden, layers, heads, ffn, eps, pre_ln)

    def forward(self, tokens, token_types):
        return self.encoder(self.embeddings(tokens, token_types))


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x):
        return self.LayerNorm(gelu_tanh(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, hidden, vocab, eps):
        super().__init__()
        self.transform = BertPredictionHeadTransform(hidden, eps)
        self.bias = nn.Parameter(torch.empty(vocab))


class BertOnlyMLMHead(nn.Module):
    def __init__(self, hidden, vocab, eps):
        super().__init__()
        self.predictions = BertLMPredictionHead(hidden, vocab, eps)


class BertForMaskedLM(nn.Module):
    """BERT with the MLM head tied to the word embeddings (logits over the padded vocabulary).

    forward(tokens, targets) uses token type 0 everywhere; targets are the
    original ids at masked positions and -100 elsewhere (see mlm_mask)."""

    family = "bert"

    def __init__(self, vocab, positions, types, hidden, layers, heads, ffn, eps=1e-12,
                 pre_ln=False):
        super().__init__()
        self.classes = None  # the true vocabulary of a padded one (build_model)
        self.bert = BertModel(vocab, positions, types, hidden, layers, heads, ffn, eps, pre_ln)
        self.cls = BertOnlyMLMHead(hidden, vocab, eps)

    def forward(self, tokens, targets=None, token_types=None):
        if token_types is None:
            token_types = torch.zeros_like(tokens)
        h = self.cls.predictions.transform(self.bert(tokens, token_types))
        logits = torch.matmul(h, self.bert.embeddings.word_embeddings.weight.t()) \
            + self.cls.predictions.bias
        if targets is None:
            return logits
        return masked_cross_entropy(logits, targets, self.classes)


# Philox4x32-10 (Salmon et al., SC'11; constants as in Random123).
_PHILOX_M0, _PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
_PHILOX_W0, _PHILOX_W1 = 0x9E3779B9, 0xBB67AE85
_U32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(ctr, key):
    """ctr: 4 arrays of uint32 words (broadcastable), key: 2 ints -> 4 uint32 arrays."""
    c = [np.asarray(x, dtype=np.uint64) & _U32 for x in ctr]
    k0, k1 = np.uint64(key[0] & 0xFFFFFFFF), np.uint64(key[1] & 0xFFFFFFFF)
    m0, m1 = np.uint64(_PHILOX_M0), np.uint64(_PHILOX_M1)
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(_PHILOX_W0)) & _U32
            k1 = (k1 + np.uint64(_PHILOX_W1)) & _U32
        p0 = m0 * c[0]  # < 2^64: no overflow
        p1 = m1 * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & _U32, p1 & _U32,
             ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & _U32, p0 & _U32]
    return [x.astype(np.uint32) for x in c]


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def philox_uniform(seed, stream, index):
    """Uniform in [0, 1) from the top 24 bits of word 0 of the Philox block with
    key = seed and counter = (index lo, index hi, stream lo, stream hi)."""
    index = np.asarray(index, dtype=np.uint64)
    ctr = [index & _U32, index >> np.uint64(32),
           np.full_like(index, stream & 0xFFFFFFFF), np.full_like(index, stream >> 32)]
    w0 = philox4x32_10(ctr, (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF))[0]
    return (w0 >> np.uint32(8)).astype(np.float32) * np.float32(2.0 ** -24)


def mlm_mask(inputs, position, seed, mask_token, prob=0.15, stream_name="mlm-mask"):
    """shardc run's masked-LM batch: element i (row-major in [B, T]) is masked iff
    uniform(seed, fnv1a64('mlm-mask'), position + i) < prob; masked inputs become
    mask_token and their targets the original id, the other targets are -100."""
    B, T = inputs.shape
    idx = np.arange(B * T, dtype=np.uint64) + np.uint64(position)
    u = philox_uniform(seed, fnv1a64(stream_name), idx)
    masked = torch.from_numpy(u < np.float32(prob)).reshape(B, T)
    targets = torch.where(masked, inputs, torch.full_like(inputs, -100))
    tokens = torch.where(masked, torch.full_like(inputs, mask_token), inputs)
    return tokens, targets


# --------------------------------------------------------------------------
# randomized ("hot") weights
# --------------------------------------------------------------------------

def _is_norm_scale(name):
    return name.endswith(".weight") and (
        ".ln_" in name or "layernorm" in name.lower() or name.endswith("norm.weight")
        or ".ln." in name or name.endswith("ln_f.weight"))


def randomize_weights(weights, seed, family=None):
    """Fresh random weights with the same names/shapes/dtypes, at scales that keep
    every part of the network numerically visible in the loss.

    shardc's default initialization (std 0.02, unit norm scales, zero biases)
    gives near-uniform logits and near-uniform attention, so the loss sits at
    ~ln(V) and is insensitive to many mapping errors (a q/k swap moves it by
    ~1e-5 relative). Here: biases ~ N(0, 0.2), norm scales ~ U(0.5, 1.5),
    matrices ~ N(0, 1/fan_in), embeddings and the LM head ~ N(0, 4/H) (logit
    std ~ 2), so attention is sharp and the loss well away from ln(V)."""
    family = family or detect_family(weights)
    g = torch.Generator().manual_seed(int(seed))
    out = {}
    for name in sorted(weights):
        t = weights[name]
        shape = tuple(t.shape)
        if _is_norm_scale(name):
            r = torch.rand(shape, generator=g, dtype=torch.float64) + 0.5
        elif name.endswith("bias"):
            r = torch.randn(shape, generator=g, dtype=torch.float64) * 0.2
        elif len(shape) == 2 and ("wte" in name or "wpe" in name or "embed" in name
                                  or "embeddings" in name or name == "lm_head.weight"):
            H = shape[1]
            r = torch.randn(shape, generator=g, dtype=torch.float64) * (2.0 / math.sqrt(H))
        elif len(shape) == 2:
            # GPT-2 Conv1D weights are [in, out]; nn.Linear weights are [out, in].
            fan_in = shape[0] if family == "gpt2" else shape[1]
            r = torch.randn(shape, generator=g, dtype=torch.float64) / math.sqrt(fan_in)
        else:
            r = torch.randn(shape, generator=g, dtype=torch.float64) * 0.2
        out[name] = r.to(t.dtype)
    return out


# --------------------------------------------------------------------------
# construction from saved weights
# --------------------------------------------------------------------------

def detect_family(weights):
    if "transformer.wte.weight" in weights:
        return "gpt2"
    if "model.embed_tokens.weight" in weights:
        return "llama"
    if "bert.embeddings.word_embeddings.weight" in weights:
        return "bert"
    raise ValueError("cannot tell the model family from the parameter names")


def build_model(weights, heads, kv_heads=None, eps=1e-5, theta=10000.0, dtype=torch.float32,
                family=None, classes=None):
    """Builds the reference model for `weights` ({HF name: tensor}).

    Sizes (hidden, layers, vocabulary, positions, MLP width) come from the
    tensor shapes; the head counts (not recoverable from shapes) are given.
    Every module parameter must be provided and every tensor must be used.
    `classes`: the true vocabulary of a padded one (the loss's softmax runs
    over the first `classes` logits, as shardc's cross-entropy `classes`)."""
    family = family or detect_family(weights)
    if family == "gpt2":
        sd, used, layers = gpt2_state_dict(weights)
        vocab, hidden = sd["transformer.wte.weight"].shape
        positions = sd["transformer.wpe.weight"].shape[0]
        ffn = sd["transformer.h.0.mlp.c_fc.weight"].shape[1] if layers else 4 * hidden
        if hidden % heads:
            raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
        model = GPT2LMHeadModel(vocab, positions, hidden, layers, heads, ffn, eps)
    elif family == "llama":
        sd = dict(weights)
        used = set(weights)
        layers = 0
        while f"model.layers.{layers}.input_layernorm.weight" in weights:
            layers += 1
        vocab, hidden = weights["model.embed_tokens.weight"].shape
        ffn = weights["model.layers.0.mlp.gate_proj.weight"].shape[0]
        kv_heads = kv_heads or heads
        if hidden % heads or heads % kv_heads:
            raise ValueError(f"bad head counts: hidden {hidden}, heads {heads}, kv {kv_heads}")
        model = LlamaForCausalLM(vocab, hidden, layers, heads, kv_heads, ffn, eps, theta)
    elif family == "bert":
        sd = dict(weights)
        used = set(weights)
        layers = 0
        while f"bert.encoder.layer.{layers}.attention.self.query.weight" in weights:
            layers += 1
        vocab, hidden = weights["bert.embeddings.word_embeddings.weight"].shape
        positions = weights["bert.embeddings.position_embeddings.weight"].shape[0]
        types = weights["bert.embeddings.token_type_embeddings.weight"].shape[0]
        ffn = weights["bert.encoder.layer.0.intermediate.dense.weight"].shape[0]
        pre_ln = "bert.encoder.final_layernorm.weight" in weights
        if hidden % heads:
            raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
        model = BertForMaskedLM(vocab, positions, types, hidden, layers, heads, ffn, eps, pre_ln)
    else:
        raise NotImplementedError(f"no reference model for family '{family}'")
    unused = sorted(set(weights) - used)
    if unused:
        raise ValueError(f"saved tensors not used by the {family} reference model: {unused}")
    model = model.to(dtype)
    expected = model.state_dict()
    for name, t in sd.items():
        if name in expected and tuple(expected[name].shape) != tuple(t.shape):
            raise ValueError(f"{name}: saved shape {tuple(t.shape)}, model expects "
                             f"{tuple(expected[name].shape)}")
    model.load_state_dict({k: v.to(dtype) for k, v in sd.items()}, strict=True)
    model.classes = classes
    model.eval()
    return model


def compute_loss(model, inputs, targets):
    with torch.no_grad():
        return float(model(inputs, targets))


# --------------------------------------------------------------------------
# training reference (check_train.py): schedule, data order, differentiable loss
# --------------------------------------------------------------------------

def lr_at(t, lr, min_lr, warmup, decay_steps):
    """shardc train's learning rate for update t (0-based): linear warmup
    lr*(t+1)/W for t < W, then cosine from lr to min_lr over updates W..D
    (r = clamp((t-W)/(D-W), 0, 1)); D <= W means a constant lr after warmup."""
    if t < warmup:
        return lr * (t + 1) / warmup
    if decay_steps <= warmup:
        return lr
    r = min(max((t - warmup) / (decay_steps - warmup), 0.0), 1.0)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * r)) * (lr - min_lr)


def train_batch_positions(position, steps, micro_batches, B, T, n_tokens, wrap="zero"):
    """Token positions of shardc train's batches: [step][micro-batch].

    Step i, micro-batch j reads position + (i*k + j)*B*T until a batch no longer
    fits (start + B*T + 1 > n_tokens). Then, with wrap="zero" (llm.c's data
    loader), the cursor restarts at 0 and advances by B*T from there; with
    wrap="mod" every start is taken modulo n_tokens - B*T (the number of
    starts at which a batch fits), without a cursor."""
    BT = B * T
    if BT + 1 > n_tokens:
        raise ValueError(f"a batch needs {BT + 1} tokens, the file has {n_tokens}")
    if wrap == "mod":
        return [[(position + (i * micro_batches + j) * BT) % (n_tokens - BT)
                 for j in range(micro_batches)] for i in range(steps)]
    if wrap != "zero":
        raise ValueError(f"wrap must be 'zero' or 'mod', not {wrap!r}")
    pos = position
    out = []
    for _ in range(steps):
        row = []
        for _ in range(micro_batches):
            if pos < 0 or pos + BT + 1 > n_tokens:
                pos = 0
            row.append(pos)
            pos += BT
        out.append(row)
    return out


def is_decayed(name, tensor):
    """AdamW weight decay applies to matrices and embeddings (>= 2 dims) only."""
    return tensor.dim() >= 2


def functional_loss_fn(weights, heads, kv_heads=None, eps=1e-5, theta=10000.0,
                       dtype=torch.float32, family=None, classes=None):
    """Returns loss(params, inputs, targets) for {shardc name: tensor} params that
    autograd differentiates by shardc's names (GPT-2's separate q/k/v projections
    are concatenated into c_attn inside the graph, tied heads stay tied).

    `weights` fixes the architecture (shapes, family); the module built from it
    is only a template, its own parameters are never used."""
    from torch.nn.utils.stateless import functional_call

    family = family or detect_family(weights)
    template = build_model(weights, heads=heads, kv_heads=kv_heads, eps=eps, theta=theta,
                           dtype=dtype, family=family, classes=classes)
    expected = set(template.state_dict())

    def loss(params, inputs, targets):
        sd = gpt2_state_dict(params)[0] if family == "gpt2" else dict(params)
        if set(sd) != expected:
            raise ValueError(f"parameter names do not match the {family} model: "
                             f"{sorted(set(sd) ^ expected)[:5]}")
        return functional_call(template, sd, (inputs, targets))

    return loss
