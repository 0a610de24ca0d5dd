//===- InitFrom.cpp - model weights from a safetensors file ---------------===//

#include "runtime/checkpoint/InitFrom.h"

#include "runtime/Error.h"
#include "runtime/checkpoint/Safetensors.h"

#include <cstring>
#include <regex>
#include <set>

namespace shardc::ckpt {

using rt::DType;
using rt::HostTensor;

namespace {

/// `transformer.h.0.ln_1.weight` and `h.0.ln_1.weight` name the same tensor.
std::string withoutTransformerPrefix(const std::string &name) {
  static const std::string prefix = "transformer.";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

std::map<std::string, rt::HostTensor> readInitParams(const std::string &path,
                                                 const std::vector<InitParam> &params) {
  std::map<std::string, ckpt::TensorData> file = ckpt::read_safetensors(path);
  // Canonical name (no `transformer.` prefix) -> the file's name.
  std::map<std::string, std::string> byCanon;
  for (const auto &[name, t] : file) {
    auto [it, inserted] = byCanon.emplace(withoutTransformerPrefix(name), name);
    if (!inserted)
      throw rt::Error(path + ": tensors '" + it->second + "' and '" + name +
                      "' are the same parameter");
  }
  std::map<std::string, std::vector<int64_t>> modelShapes;
  for (const InitParam &p : params)
    modelShapes[withoutTransformerPrefix(p.name)] = p.shape;

  std::set<std::string> used;
  auto find = [&](const std::string &canon) -> ckpt::TensorData * {
    auto it = byCanon.find(canon);
    return it == byCanon.end() ? nullptr : &file.at(it->second);
  };
  auto mismatch = [&](const std::string &canon, const std::vector<int64_t> &found,
                      const std::vector<int64_t> &expected, const std::string &param) {
    return rt::Error(path + ": tensor '" + byCanon.at(canon) + "' has shape " +
                     rt::shape_str(found) + " but the model expects " + rt::shape_str(expected) +
                     (param.empty() ? "" : " (for its parameter '" + param + "')"));
  };
  auto toHost = [&](const std::string &canon, ckpt::TensorData &t) {
    if (!ckpt::safetensors_dtype_size(t.dtype) || t.dtype == "I32" || t.dtype[0] == 'I' ||
        t.dtype[0] == 'U' || t.dtype == "BOOL")
      throw rt::Error(path + ": tensor '" + byCanon.at(canon) + "' is " + t.dtype +
                      "; parameters are floats");
    HostTensor h;
    h.dtype = rt::dtype_from_name(t.dtype);
    h.shape = t.shape;
    h.bytes = t.bytes;
    return h;
  };

  std::map<std::string, HostTensor> values;
  static const std::regex qkv(R"(^(.*\.attn\.)([qkv])_proj\.(weight|bias)$)");
  for (const InitParam &p : params) {
    const std::string &name = p.name;
    std::string canon = withoutTransformerPrefix(name);
    const std::vector<int64_t> &shape = p.shape;
    HostTensor value;
    std::smatch m;
    if (ckpt::TensorData *t = find(canon)) {
      used.insert(canon);
      if (t->shape == shape) {
        value = toHost(canon, *t);
      } else if (p.embedding && shape.size() == 2 &&
                 t->shape.size() == 2 && t->shape[1] == shape[1] && t->shape[0] < shape[0]) {
        // A vocabulary padded to a multiple of 64/128: copy the released rows,
        // the padding rows are zero.
        HostTensor rows = toHost(canon, *t);
        value = HostTensor(rows.dtype, shape);
        std::memcpy(value.bytes.data(), rows.bytes.data(), rows.bytes.size());
      } else {
        throw mismatch(canon, t->shape, shape, name);
      }
    } else if (std::regex_match(canon, m, qkv) &&
               find(m[1].str() + "c_attn." + m[3].str())) {
      // GPT-2's fused Conv1D: c_attn = cat([q, k, v], dim -1), [in, out] layout.
      std::string prefix = m[1].str(), which = m[2].str(), suffix = m[3].str();
      std::string fusedName = prefix + "c_attn." + suffix;
      ckpt::TensorData &fused = *find(fusedName);
      used.insert(fusedName);
      int64_t offset = 0, total = 0, width = shape.back();
      bool before = true; // q, k and v in this order
      for (const char *x : {"q", "k", "v"}) {
        if (which == x)
          before = false;
        auto it = modelShapes.find(prefix + x + "_proj." + suffix);
        if (it == modelShapes.end() || it->second.empty())
          throw rt::Error(path + ": '" + byCanon.at(fusedName) +
                          "' fuses q/k/v but the model has no '" + prefix + x + "_proj." +
                          suffix + "'");
        if (before)
          offset += it->second.back();
        total += it->second.back();
      }
      std::vector<int64_t> expected = shape;
      expected.back() = total;
      if (fused.shape != expected)
        throw mismatch(fusedName, fused.shape, expected, name);
      HostTensor whole = toHost(fusedName, fused);
      value = HostTensor(whole.dtype, shape);
      size_t es = rt::dtype_size(whole.dtype);
      int64_t rows = total ? whole.numel() / total : 0;
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(value.bytes.data() + static_cast<size_t>(r * width) * es,
                    whole.bytes.data() + static_cast<size_t>(r * total + offset) * es,
                    static_cast<size_t>(width) * es);
    } else {
      std::string hint = std::regex_match(canon, m, qkv)
                             ? " or '" + m[1].str() + "c_attn." + m[3].str() + "'"
                             : "";
      throw rt::Error(path + ": no tensor '" + canon + "'" + hint +
                      (canon != name ? " (with or without the 'transformer.' prefix)" : "") +
                      " for the model's parameter '" + name + "'");
    }
    values[name] = std::move(value);
  }

  // A tied LM head may be stored (HF writes it in some files): it must be wte.
  if (ckpt::TensorData *head = find("lm_head.weight"); head && !used.count("lm_head.weight")) {
    ckpt::TensorData *wte = find("wte.weight");
    if (!wte || wte->shape != head->shape || wte->dtype != head->dtype ||
        wte->bytes != head->bytes)
      throw rt::Error(path + ": tensor '" + byCanon.at("lm_head.weight") +
                      "' differs from the token embedding, but the model ties its LM head to "
                      "the embedding (an untied LM head cannot be loaded)");
    used.insert("lm_head.weight");
  }
  std::vector<std::string> unknown;
  for (const auto &[canon, name] : byCanon) {
    if (used.count(canon))
      continue;
    // Hugging Face GPT-2's causal-mask buffers.
    if (canon.rfind("h.", 0) == 0 &&
        (endsWith(canon, ".attn.bias") || endsWith(canon, ".attn.masked_bias")))
      continue;
    unknown.push_back(name);
  }
  if (!unknown.empty()) {
    std::string list;
    for (size_t i = 0; i < unknown.size() && i < 5; ++i)
      list += (i ? ", '" : "'") + unknown[i] + "'";
    if (unknown.size() > 5)
      list += " and " + std::to_string(unknown.size() - 5) + " more";
    throw rt::Error(path + ": " + std::to_string(unknown.size()) +
                    " tensor(s) that are no parameter of the model: " + list);
  }
  return values;
}


} // namespace shardc::ckpt
