//===- InitFrom.cpp - model weights from a safetensors file ---------------===//

#include "runtime/checkpoint/InitFrom.h"

#include "runtime/Error.h"
#include "runtime/checkpoint/Safetensors.h"

#include <algorithm>
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

InitSource::InitSource(const std::string &path, const std::vector<InitParam> &params)
    : index_(ckpt::index_safetensors(path)), file_(path, std::ios::binary) {
  if (!file_)
    throw rt::Error("cannot open safetensors file '" + path + "'");
  std::map<std::string, ckpt::TensorEntry> &file = index_.tensors;
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
  auto find = [&](const std::string &canon) -> ckpt::TensorEntry * {
    auto it = byCanon.find(canon);
    return it == byCanon.end() ? nullptr : &file.at(it->second);
  };
  auto mismatch = [&](const std::string &canon, const std::vector<int64_t> &found,
                      const std::vector<int64_t> &expected, const std::string &param) {
    return rt::Error(path + ": tensor '" + byCanon.at(canon) + "' has shape " +
                     rt::shape_str(found) + " but the model expects " + rt::shape_str(expected) +
                     (param.empty() ? "" : " (for its parameter '" + param + "')"));
  };
  // Where a parameter's values are: `canon`'s rows (the first `fileRows`; any
  // further rows of the parameter are zero) and, of its last dim, the
  // `shape.back()` columns from `colOffset`.
  auto source = [&](const std::string &canon, const ckpt::TensorEntry &t,
                    const std::vector<int64_t> &shape, int64_t colOffset) {
    if (!ckpt::safetensors_dtype_size(t.dtype) || t.dtype == "I32" || t.dtype[0] == 'I' ||
        t.dtype[0] == 'U' || t.dtype == "BOOL")
      throw rt::Error(path + ": tensor '" + byCanon.at(canon) + "' is " + t.dtype +
                      "; parameters are floats");
    Source src;
    src.tensor = byCanon.at(canon);
    src.dtype = rt::dtype_from_name(t.dtype);
    src.shape = shape;
    src.fileShape = t.shape;
    src.colOffset = colOffset;
    return src;
  };

  static const std::regex qkv(R"(^(.*\.attn\.)([qkv])_proj\.(weight|bias)$)");
  for (const InitParam &p : params) {
    const std::string &name = p.name;
    std::string canon = withoutTransformerPrefix(name);
    const std::vector<int64_t> &shape = p.shape;
    Source value;
    std::smatch m;
    if (ckpt::TensorEntry *t = find(canon)) {
      used.insert(canon);
      if (t->shape == shape) {
        value = source(canon, *t, shape, 0);
      } else if ((p.embedding || canon == "lm_head.weight") && shape.size() == 2 &&
                 t->shape.size() == 2 && t->shape[1] == shape[1] && t->shape[0] < shape[0]) {
        // A vocabulary padded to a multiple of 64/128: copy the released rows,
        // the padding rows are zero (the token table, and an untied LM head:
        // LLaMA's lm_head is [vocabulary, hidden]).
        value = source(canon, *t, shape, 0);
      } else {
        throw mismatch(canon, t->shape, shape, name);
      }
    } else if (std::regex_match(canon, m, qkv) &&
               find(m[1].str() + "c_attn." + m[3].str())) {
      // GPT-2's fused Conv1D: c_attn = cat([q, k, v], dim -1), [in, out] layout.
      std::string prefix = m[1].str(), which = m[2].str(), suffix = m[3].str();
      std::string fusedName = prefix + "c_attn." + suffix;
      ckpt::TensorEntry &fused = *find(fusedName);
      used.insert(fusedName);
      int64_t offset = 0, total = 0;
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
      value = source(fusedName, fused, shape, offset);
    } else {
      std::string hint = std::regex_match(canon, m, qkv)
                             ? " or '" + m[1].str() + "c_attn." + m[3].str() + "'"
                             : "";
      throw rt::Error(path + ": no tensor '" + canon + "'" + hint +
                      (canon != name ? " (with or without the 'transformer.' prefix)" : "") +
                      " for the model's parameter '" + name + "'");
    }
    sources_[name] = std::move(value);
  }

  // A tied LM head may be stored (HF writes it in some files): it must be wte.
  if (ckpt::TensorEntry *head = find("lm_head.weight"); head && !used.count("lm_head.weight")) {
    ckpt::TensorEntry *wte = find("wte.weight");
    // Compared in chunks: a rank never holds the whole table for it.
    auto same = [&]() {
      const uint64_t size = wte->end - wte->begin, chunk = 1 << 20;
      std::vector<uint8_t> a(std::min(size, chunk)), b(a.size());
      for (uint64_t at = 0; at < size; at += chunk) {
        uint64_t n = std::min(chunk, size - at);
        ckpt::read_tensor_bytes(index_, byCanon.at("wte.weight"), at, n, a.data(), &file_);
        ckpt::read_tensor_bytes(index_, byCanon.at("lm_head.weight"), at, n, b.data(), &file_);
        if (std::memcmp(a.data(), b.data(), n) != 0)
          return false;
      }
      return true;
    };
    if (!wte || wte->shape != head->shape || wte->dtype != head->dtype || !same())
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
    // Hugging Face LLaMA's rotary frequencies (older files store them): a
    // buffer HF recomputes from rope_theta; shardc's xf.rope has its theta.
    if (canon.rfind("model.layers.", 0) == 0 && endsWith(canon, ".self_attn.rotary_emb.inv_freq"))
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
}

HostTensor InitSource::readBlock(const std::string &param, const std::vector<int64_t> &offsets,
                                 const std::vector<int64_t> &shape) const {
  auto it = sources_.find(param);
  if (it == sources_.end())
    throw rt::Error(index_.path + ": no source for parameter '" + param + "'");
  const Source &src = it->second;
  const size_t rank = src.shape.size();
  if (offsets.size() != rank || shape.size() != rank)
    throw rt::Error("block of '" + param + "' has the wrong rank");
  for (size_t d = 0; d < rank; ++d)
    if (offsets[d] < 0 || shape[d] < 0 || offsets[d] + shape[d] > src.shape[d])
      throw rt::Error("block of '" + param + "' leaves its shape " + rt::shape_str(src.shape));
  HostTensor out(src.dtype, shape); // zero-filled: padding rows stay zero
  if (out.numel() == 0)
    return out;
  const size_t es = rt::dtype_size(src.dtype);
  // A whole file tensor (a scalar too): one read, checked against its
  // checksum.
  if (src.fileShape == shape && src.colOffset == 0 &&
      std::all_of(offsets.begin(), offsets.end(), [](int64_t o) { return o == 0; })) {
    ckpt::read_tensor_bytes(index_, src.tensor, 0, out.bytes.size(), out.bytes.data(), &file_);
    bytesRead_ += out.bytes.size();
    ckpt::verify_tensor_checksum(index_, src.tensor, out.bytes.data(), out.bytes.size());
    return out;
  }
  // One contiguous run of the last dim per row of the block.
  const int64_t width = shape[rank - 1];
  const int64_t fileLast = src.fileShape[rank - 1];
  const int64_t fileRows = src.fileShape[0];
  // Full rows of a 2-D block (row-split tables and weights): one read for all
  // the rows the file has.
  if (rank == 2 && width == fileLast && src.colOffset == 0) {
    int64_t rows = std::max<int64_t>(0, std::min(shape[0], fileRows - offsets[0]));
    uint64_t bytes = static_cast<uint64_t>(rows) * width * es;
    if (bytes)
      ckpt::read_tensor_bytes(index_, src.tensor,
                              static_cast<uint64_t>(offsets[0]) * fileLast * es, bytes,
                              out.bytes.data(), &file_);
    bytesRead_ += bytes;
    return out;
  }
  std::vector<int64_t> index(rank - 1, 0);
  for (int64_t row = 0, rows = out.numel() / width; row < rows; ++row) {
    // The row's global index in the file (row-major over the leading dims).
    int64_t flat = 0;
    bool padding = false;
    for (size_t d = 0; d + 1 < rank; ++d) {
      int64_t g = offsets[d] + index[d];
      if (d == 0 && g >= fileRows)
        padding = true;
      flat = flat * src.fileShape[d] + g;
    }
    if (!padding) {
      uint64_t element = static_cast<uint64_t>(flat) * fileLast + src.colOffset + offsets[rank - 1];
      ckpt::read_tensor_bytes(index_, src.tensor, element * es, width * es,
                              out.bytes.data() + static_cast<size_t>(row * width) * es, &file_);
      bytesRead_ += width * es;
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

HostTensor InitSource::readWhole(const std::string &param) const {
  auto it = sources_.find(param);
  if (it == sources_.end())
    throw rt::Error(index_.path + ": no source for parameter '" + param + "'");
  return readBlock(param, std::vector<int64_t>(it->second.shape.size(), 0), it->second.shape);
}

std::map<std::string, rt::HostTensor> readInitParams(const std::string &path,
                                                 const std::vector<InitParam> &params) {
  InitSource source(path, params);
  std::map<std::string, HostTensor> values;
  for (const InitParam &p : params)
    values[p.name] = source.readWhole(p.name);
  return values;
}


} // namespace shardc::ckpt
