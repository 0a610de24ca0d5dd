//===- Safetensors.cpp - safetensors checkpoints --------------------------===//
//
// The reader trusts nothing in the header: every size and offset is checked
// against the file before a byte of tensor data is read, and all arithmetic on
// them is overflow-checked, so a corrupt file is an rt::Error, never a crash
// or an out-of-bounds read. Then each tensor's bytes are checked against
// the CRC-32C the writer stored for it, so damage that leaves the structure
// intact (a flipped mantissa bit) is an error as well.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Safetensors.h"

#include "runtime/Error.h"
#include "runtime/checkpoint/Crc32c.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

using namespace shardc;
using namespace shardc::ckpt;

namespace {

constexpr const char *kMetadataKey = "__metadata__";

/// A JSON value that is a non-negative integer, or nullopt.
std::optional<uint64_t> asCount(const nlohmann::json &value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

/// product(shape) * elementBytes, or nullopt if it overflows 64 bits.
std::optional<uint64_t> byteSize(const std::vector<int64_t> &shape,
                                 size_t elementBytes) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end())
    return 0;
  uint64_t bytes = elementBytes;
  for (int64_t dim : shape) {
    if (dim < 0 || bytes > std::numeric_limits<uint64_t>::max() /
                               static_cast<uint64_t>(dim))
      return std::nullopt;
    bytes *= static_cast<uint64_t>(dim);
  }
  return bytes;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// A checksum as the metadata stores it: 8 lowercase hex digits.
std::string hex8(uint32_t value) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", value);
  return buf;
}

/// The value of 8 hex digits (either case), or nullopt.
std::optional<uint32_t> parseHex8(const std::string &text) {
  if (text.size() != 8)
    return std::nullopt;
  uint32_t value = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
    if (digit < 0)
      return std::nullopt;
    value = value << 4 | static_cast<uint32_t>(digit);
  }
  return value;
}

bool isChecksumKey(const std::string &key) {
  return key.compare(0, kChecksumKeyPrefix.size(), kChecksumKeyPrefix) == 0;
}

/// Where one tensor's bytes lie in the data buffer.
struct Extent {
  const std::string *name;
  uint64_t begin, end;
};

void writeAll(int fd, const void *data, size_t size, const std::string &path) {
  const auto *p = static_cast<const uint8_t *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      throw rt::Error("cannot write '" + path + "': " + std::strerror(errno));
    p += n;
    size -= static_cast<size_t>(n);
  }
}

} // namespace

size_t shardc::ckpt::safetensors_dtype_size(std::string_view dtype) {
  static const std::pair<std::string_view, size_t> kSizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  for (const auto &[name, size] : kSizes)
    if (name == dtype)
      return size;
  return 0;
}

shardc::ckpt::SafetensorsIndex shardc::ckpt::index_safetensors(const std::string &path,
                                                              Checksums checksums) {
  SafetensorsIndex index;
  index.path = path;
  std::map<std::string, std::string> *metadata = &index.metadata;
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file)
    throw rt::Error("cannot open safetensors file '" + path +
                    "': " + std::strerror(errno));
  const auto fileBytes = static_cast<int64_t>(file.tellg());
  file.seekg(0);
  if (fileBytes < 0 || !file)
    throw rt::Error("cannot read safetensors file '" + path + "'");
  auto corrupt = [&](const std::string &what) {
    return rt::Error("safetensors file '" + path + "' is corrupt: " + what);
  };
  if (fileBytes < 8)
    throw corrupt("it has " + std::to_string(fileBytes) +
                  " bytes, fewer than the 8-byte header length");

  uint8_t lengthBytes[8];
  file.read(reinterpret_cast<char *>(lengthBytes), 8);
  uint64_t headerBytes = 0;
  for (int i = 0; i < 8; ++i)
    headerBytes |= static_cast<uint64_t>(lengthBytes[i]) << (8 * i);
  const auto afterLength = static_cast<uint64_t>(fileBytes) - 8;
  if (headerBytes > afterLength)
    throw corrupt("its header length is " + std::to_string(headerBytes) +
                  " bytes but only " + std::to_string(afterLength) +
                  " bytes follow the length field");
  std::string headerText(headerBytes, '\0');
  if (!file.read(headerText.data(), static_cast<std::streamsize>(headerBytes)))
    throw rt::Error("cannot read the header of safetensors file '" + path +
                    "'");

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(headerText);
  } catch (const nlohmann::json::exception &e) {
    throw corrupt(std::string("its header is not valid JSON: ") + e.what());
  }
  if (!header.is_object())
    throw corrupt("its header is not a JSON object");

  const uint64_t bufferBytes = afterLength - headerBytes;
  std::map<std::string, TensorEntry> &tensors = index.tensors;
  std::map<std::string, uint32_t> stored; // tensor name -> its CRC-32C
  std::vector<Extent> extents;
  for (const auto &item : header.items()) {
    // Named references, not structured bindings: lambdas below capture them.
    const std::string &name = item.key();
    const nlohmann::json &entry = item.value();
    if (name == kMetadataKey) {
      if (!entry.is_object())
        throw corrupt("\"__metadata__\" is not an object");
      for (const auto &[key, value] : entry.items()) {
        if (!value.is_string())
          throw corrupt("metadata \"" + key + "\" is not a string");
        if (isChecksumKey(key)) {
          std::optional<uint32_t> crc = parseHex8(value.get<std::string>());
          if (!crc)
            throw corrupt("metadata \"" + key + "\" is " + value.dump() +
                          ", not a CRC32C of 8 hex digits");
          stored[key.substr(kChecksumKeyPrefix.size())] = *crc;
        } else if (metadata) {
          (*metadata)[key] = value.get<std::string>();
        }
      }
      continue;
    }

    auto bad = [&](const std::string &what) {
      return corrupt("tensor '" + name + "': " + what);
    };
    if (!entry.is_object())
      throw bad("its entry is not an object");
    auto field = [&](const char *key) -> const nlohmann::json & {
      auto it = entry.find(key);
      if (it == entry.end())
        throw bad(std::string("no \"") + key + "\"");
      return *it;
    };

    TensorEntry tensor;
    const nlohmann::json &dtype = field("dtype");
    if (!dtype.is_string())
      throw bad("\"dtype\" is not a string");
    tensor.dtype = dtype.get<std::string>();
    size_t elementBytes = safetensors_dtype_size(tensor.dtype);
    if (elementBytes == 0)
      throw bad("unknown dtype \"" + tensor.dtype + "\"");

    const nlohmann::json &shape = field("shape");
    if (!shape.is_array())
      throw bad("\"shape\" is not an array");
    for (const nlohmann::json &dim : shape) {
      std::optional<uint64_t> extent = asCount(dim);
      if (!extent || *extent > std::numeric_limits<int64_t>::max())
        throw bad("shape " + shape.dump() +
                  " is not a list of non-negative integers");
      tensor.shape.push_back(static_cast<int64_t>(*extent));
    }

    const nlohmann::json &offsets = field("data_offsets");
    std::optional<uint64_t> begin, end;
    if (offsets.is_array() && offsets.size() == 2) {
      begin = asCount(offsets[0]);
      end = asCount(offsets[1]);
    }
    if (!begin || !end)
      throw bad("data_offsets " + offsets.dump() +
                " is not a pair of non-negative integers");
    if (*begin > *end || *end > bufferBytes)
      throw bad("data_offsets " + offsets.dump() + " is out of range of the " +
                std::to_string(bufferBytes) + "-byte data buffer");
    std::optional<uint64_t> expected = byteSize(tensor.shape, elementBytes);
    if (!expected || *expected != *end - *begin)
      throw bad("data_offsets " + offsets.dump() + " hold " +
                std::to_string(*end - *begin) + " bytes but " + tensor.dtype +
                " " + shapeString(tensor.shape) + " needs " +
                (expected ? std::to_string(*expected) : "more than 2^64"));

    tensor.begin = *begin;
    tensor.end = *end;
    auto inserted = tensors.emplace(name, std::move(tensor));
    extents.push_back({&inserted.first->first, *begin, *end});
  }

  // The format forbids holes and overlaps: sorted by offset, each tensor must
  // start where the previous one ended, and the last must end the file.
  std::sort(extents.begin(), extents.end(),
            [](const Extent &a, const Extent &b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t covered = 0;
  const std::string *previous = nullptr;
  for (const Extent &e : extents) {
    if (e.begin < covered)
      throw corrupt("tensor '" + *e.name + "' [" + std::to_string(e.begin) +
                    ", " + std::to_string(e.end) + ") overlaps tensor '" +
                    *previous + "', which ends at " + std::to_string(covered));
    if (e.begin > covered)
      throw corrupt("bytes [" + std::to_string(covered) + ", " +
                    std::to_string(e.begin) +
                    ") of the data buffer belong to no tensor");
    covered = e.end;
    previous = e.name;
  }
  if (covered != bufferBytes)
    throw corrupt("bytes [" + std::to_string(covered) + ", " +
                  std::to_string(bufferBytes) +
                  ") of the data buffer belong to no tensor");

  for (const auto &[name, crc] : stored)
    if (!tensors.count(name))
      throw corrupt("metadata \"" + std::string(kChecksumKeyPrefix) + name +
                    "\" is the checksum of a tensor the file does not have");
  if (checksums == Checksums::Require)
    for (const auto &[name, tensor] : tensors)
      if (!stored.count(name))
        throw rt::Error(path + ": tensor '" + name +
                        "' has no CRC32C checksum (metadata \"" +
                        std::string(kChecksumKeyPrefix) + name +
                        "\"); shardc writes one for every tensor, so the "
                        "file is damaged or was not written by shardc");

  for (auto &[name, crc] : stored)
    tensors[name].crc = crc;
  index.dataStart = 8 + headerBytes;
  return index;
}

void shardc::ckpt::read_tensor_bytes(const SafetensorsIndex &index, const std::string &name,
                                     uint64_t offset, uint64_t bytes, void *dst,
                                     std::ifstream *stream) {
  const TensorEntry &t = index.tensors.at(name);
  if (offset > t.end - t.begin || bytes > t.end - t.begin - offset)
    throw rt::Error("cannot read bytes [" + std::to_string(offset) + ", " +
                    std::to_string(offset + bytes) + ") of tensor '" + name + "' (" +
                    std::to_string(t.end - t.begin) + " bytes) from '" + index.path + "'");
  std::ifstream own;
  if (!stream) {
    own.open(index.path, std::ios::binary);
    stream = &own;
  }
  stream->clear();
  stream->seekg(static_cast<std::streamoff>(index.dataStart + t.begin + offset));
  if (!*stream ||
      !stream->read(static_cast<char *>(dst), static_cast<std::streamsize>(bytes)))
    throw rt::Error("cannot read tensor '" + name + "' from safetensors file '" +
                    index.path + "'");
}

void shardc::ckpt::verify_tensor_checksum(const SafetensorsIndex &index, const std::string &name,
                                          const void *bytes, uint64_t size) {
  const TensorEntry &e = index.tensors.at(name);
  if (!e.crc)
    return;
  uint32_t computed = crc32c(bytes, size);
  if (computed != *e.crc)
    throw rt::Error(index.path + ": tensor '" + name + "' fails its CRC32C check (stored " +
                    hex8(*e.crc) + ", computed " + hex8(computed) + "): the file is damaged");
}

std::map<std::string, TensorData>
shardc::ckpt::read_safetensors(const std::string &path,
                               std::map<std::string, std::string> *metadata,
                               Checksums checksums) {
  SafetensorsIndex index = index_safetensors(path, checksums);
  if (metadata)
    *metadata = index.metadata;
  std::vector<std::pair<uint64_t, const std::string *>> order;
  for (const auto &[name, t] : index.tensors)
    order.push_back({t.begin, &name});
  std::sort(order.begin(), order.end());
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw rt::Error("cannot open safetensors file '" + path + "': " + std::strerror(errno));
  std::map<std::string, TensorData> tensors;
  // Offset order reads the file front to back.
  for (const auto &[begin, name] : order) {
    const TensorEntry &e = index.tensors.at(*name);
    TensorData &t = tensors[*name];
    t.dtype = e.dtype;
    t.shape = e.shape;
    t.bytes.resize(e.end - e.begin);
    file.seekg(static_cast<std::streamoff>(index.dataStart + e.begin));
    if (!file.read(reinterpret_cast<char *>(t.bytes.data()),
                   static_cast<std::streamsize>(t.bytes.size())))
      throw rt::Error("cannot read tensor '" + *name + "' from safetensors file '" + path + "'");
    verify_tensor_checksum(index, *name, t.bytes.data(), t.bytes.size());
  }
  return tensors;
}

void shardc::ckpt::write_safetensors(
    const std::string &path, const std::map<std::string, TensorData> &tensors,
    const std::map<std::string, std::string> &metadata) {
  nlohmann::json header = nlohmann::json::object();
  nlohmann::json meta = nlohmann::json::object();
  for (const auto &[key, value] : metadata) {
    if (isChecksumKey(key))
      throw rt::Error("cannot write safetensors file '" + path +
                      "': metadata key \"" + key + "\" is reserved (\"" +
                      std::string(kChecksumKeyPrefix) +
                      "<tensor>\" holds a tensor's checksum)");
    meta[key] = value;
  }
  uint64_t offset = 0;
  for (const auto &item : tensors) {
    const std::string &name = item.first;
    const TensorData &tensor = item.second;
    auto bad = [&](const std::string &what) {
      return rt::Error("cannot write safetensors file '" + path +
                       "': tensor '" + name + "' " + what);
    };
    if (name == kMetadataKey)
      throw bad("uses the reserved name");
    size_t elementBytes = safetensors_dtype_size(tensor.dtype);
    if (elementBytes == 0)
      throw bad("has unknown dtype \"" + tensor.dtype + "\"");
    std::optional<uint64_t> expected = byteSize(tensor.shape, elementBytes);
    if (!expected || *expected != tensor.bytes.size())
      throw bad("has " + std::to_string(tensor.bytes.size()) + " bytes but " +
                tensor.dtype + " " + shapeString(tensor.shape) + " needs " +
                (expected ? std::to_string(*expected) : "more than 2^64"));
    header[name] = {{"dtype", tensor.dtype},
                    {"shape", tensor.shape},
                    {"data_offsets", {offset, offset + tensor.bytes.size()}}};
    meta[std::string(kChecksumKeyPrefix) + name] =
        hex8(crc32c(tensor.bytes.data(), tensor.bytes.size()));
    offset += tensor.bytes.size();
  }
  if (!meta.empty())
    header[kMetadataKey] = std::move(meta);

  std::string headerText;
  try {
    headerText = header.dump();
  } catch (const nlohmann::json::exception &e) {
    throw rt::Error("cannot write safetensors file '" + path +
                    "': a tensor name or metadata string is not UTF-8 (" +
                    e.what() + ")");
  }
  // Padding keeps the data buffer 8-byte aligned for memory-mapped readers.
  headerText.append((8 - headerText.size() % 8) % 8, ' ');
  uint8_t lengthBytes[8];
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] =
        static_cast<uint8_t>(uint64_t(headerText.size()) >> (8 * i));

  const std::string tmpPath = path + ".tmp." + std::to_string(::getpid());
  int fd =
      ::open(tmpPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw rt::Error("cannot create '" + tmpPath +
                    "' to write safetensors "
                    "file '" +
                    path + "': " + std::strerror(errno));
  try {
    writeAll(fd, lengthBytes, sizeof(lengthBytes), tmpPath);
    writeAll(fd, headerText.data(), headerText.size(), tmpPath);
    for (const auto &entry : tensors)
      writeAll(fd, entry.second.bytes.data(), entry.second.bytes.size(),
               tmpPath);
    if (::fsync(fd) != 0)
      throw rt::Error("cannot sync '" + tmpPath + "': " + std::strerror(errno));
    int closed = ::close(fd);
    fd = -1;
    if (closed != 0)
      throw rt::Error("cannot close '" + tmpPath +
                      "': " + std::strerror(errno));
    if (::rename(tmpPath.c_str(), path.c_str()) != 0)
      throw rt::Error("cannot rename '" + tmpPath + "' to '" + path +
                      "': " + std::strerror(errno));
  } catch (...) {
    if (fd >= 0)
      ::close(fd);
    ::unlink(tmpPath.c_str());
    throw;
  }

  // Syncing the directory makes the rename itself durable. Best effort: some
  // file systems refuse fsync on directories, and the data is already safe.
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  int dirFd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
}
