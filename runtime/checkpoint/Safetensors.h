//===- Safetensors.h - safetensors checkpoints ------------------*- C++ -*-===//
//
// Reads and writes the safetensors format (huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON header
//   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
//    "__metadata__": {"key": "value"}}
// and then the data buffer, which the offsets (relative to its start) must
// cover exactly, without holes or overlaps.
//
// Files written here carry a CRC-32C of every tensor's bytes in the metadata,
// "crc32c:<tensor name>": "<8 lowercase hex digits>" (string values, as the
// format requires, so other readers see ordinary metadata and ignore it).
// The reader verifies every checksum a file has.
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_CHECKPOINT_SAFETENSORS_H
#define SHARDC_RUNTIME_CHECKPOINT_SAFETENSORS_H

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardc::ckpt {

/// One tensor: its safetensors dtype name, shape and raw little-endian bytes.
struct TensorData {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// The metadata key of a tensor's checksum is this prefix and its name.
inline constexpr std::string_view kChecksumKeyPrefix = "crc32c:";

/// What read_safetensors asks of the per-tensor checksums.
enum class Checksums {
  /// Verify those present; files without them (Hugging Face's, other tools',
  /// shardc's before checksums) load.
  VerifyPresent,
  /// Every tensor must have one: for files that shardc always writes.
  Require,
};

/// Bytes per element of a safetensors dtype ("F32", "BF16", "I64", ...), or 0
/// for a name the format does not define.
size_t safetensors_dtype_size(std::string_view dtype);

/// A tensor's entry in a safetensors header: dtype, shape, its bytes
/// [begin, end) in the data buffer, and its CRC-32C if the metadata has one.
struct TensorEntry {
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
  std::optional<uint32_t> crc;
};

/// A validated header: what a reader needs to read any part of any tensor.
struct SafetensorsIndex {
  std::string path;
  uint64_t dataStart = 0; ///< file offset of the data buffer
  std::map<std::string, TensorEntry> tensors;
  std::map<std::string, std::string> metadata; ///< less the checksums
};

/// Reads and validates the header only (the same checks as read_safetensors
/// before it reads data; no checksum is verified, no tensor data read).
SafetensorsIndex index_safetensors(const std::string &path,
                                   Checksums checksums = Checksums::VerifyPresent);

/// Reads `bytes` bytes of tensor `name` starting `offset` bytes into it (a
/// part of a tensor: its checksum, which covers the whole, is not checked),
/// through `file` (open on index.path, binary) when given, else a new stream.
void read_tensor_bytes(const SafetensorsIndex &index, const std::string &name,
                       uint64_t offset, uint64_t bytes, void *dst,
                       std::ifstream *file = nullptr);

/// Checks `bytes` (all of tensor `name`) against the tensor's CRC32C if the
/// file has one; throws the reader's "fails its CRC32C check" error.
void verify_tensor_checksum(const SafetensorsIndex &index, const std::string &name,
                            const void *bytes, uint64_t size);

/// Reads every tensor of a safetensors file, and its "__metadata__" (less the
/// checksums) into `metadata` if given. The header is validated before any
/// data is read, and every tensor with a checksum is checked against it;
/// anything malformed, a checksum that does not match, or (with
/// Checksums::Require) a tensor without one throws rt::Error naming the file,
/// the tensor and the problem.
std::map<std::string, TensorData>
read_safetensors(const std::string &path,
                 std::map<std::string, std::string> *metadata = nullptr,
                 Checksums checksums = Checksums::VerifyPresent);

/// Writes tensors in name order, each with its checksum in the metadata, the
/// header padded with spaces to a multiple of 8 bytes. The file is written to
/// path + ".tmp.<pid>", synced and renamed over `path`, so a crash leaves
/// either the old file or the new one. Throws rt::Error if a tensor's byte
/// size does not match its dtype and shape, a metadata key starts with
/// kChecksumKeyPrefix, or the file cannot be written.
void write_safetensors(const std::string &path,
                       const std::map<std::string, TensorData> &tensors,
                       const std::map<std::string, std::string> &metadata = {});

} // namespace shardc::ckpt

#endif // SHARDC_RUNTIME_CHECKPOINT_SAFETENSORS_H
