//===- Mesh.h - the device mesh, one type for compiler and runtime -*- C++ -*-===//
//
// Named axes over a grid of ranks ("dp=2,tp=4"), MLIR-free, so the sharding
// passes (compiler/sharding/Sharding.h derives its Mesh from this one to read
// and write `shard.grid`), the executor's in-process mesh, the program
// descriptor (rt::MeshDesc is this type) and every communicator share one
// rank arithmetic:
//  - ranks are numbered row-major over the mesh coordinates (the last axis
//    varies fastest), as MPI_Cart and NCCL communicator splits number them;
//  - a dim split over axes [a, b] is cut into size(a)*size(b) contiguous
//    blocks; block index = coord(a)*size(b) + coord(b) (shardIndex);
//  - a collective's group on `axes` is the ranks sharing every other
//    coordinate, ordered by that block index (group; the MPI_Comm_split key).
//
// Axis lists are any range of integer axis indices (the compiler's
// SmallVector<int16_t>, the runtime's std::vector<int>).
//
//===----------------------------------------------------------------------===//
#ifndef SHARDC_RUNTIME_ABI_MESH_H
#define SHARDC_RUNTIME_ABI_MESH_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardc::abi {

/// Largest number of devices a mesh may have (2^24): sizes beyond it are
/// typos or overflow, never a machine.
inline constexpr int64_t kMaxDevices = int64_t(1) << 24;

/// An axis name is an identifier: [A-Za-z_][A-Za-z0-9_]*.
bool isAxisName(std::string_view s);
/// Every size positive and their product at most kMaxDevices (checked
/// without overflow).
bool withinDeviceLimit(const std::vector<int64_t> &sizes);

struct Mesh {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;

  int numAxes() const { return static_cast<int>(sizes.size()); }
  int64_t numRanks() const;
  /// Index of a named axis, or -1.
  int axisIndex(std::string_view name) const;

  /// Product of the sizes of `axes` (1 for none).
  template <class Axes = std::vector<int>> int64_t size(const Axes &axes) const {
    int64_t n = 1;
    for (auto a : axes)
      n *= sizes.at(static_cast<size_t>(a));
    return n;
  }
  /// Mesh coordinates of a rank and back.
  std::vector<int64_t> coords(int64_t rank) const;
  int64_t linearRank(const std::vector<int64_t> &coords) const;
  /// Index of the block `coords` owns along `axes` (first axis major).
  template <class Axes = std::vector<int>> int64_t shardIndex(const Axes &axes, const std::vector<int64_t> &c) const {
    int64_t idx = 0;
    for (auto a : axes)
      idx = idx * sizes.at(static_cast<size_t>(a)) + c.at(static_cast<size_t>(a));
    return idx;
  }
  /// The ranks sharing `rank`'s coordinates on every axis not in `axes`,
  /// ordered by shardIndex(axes): a collective's group.
  template <class Axes = std::vector<int>> std::vector<int64_t> group(const Axes &axes, int64_t rank) const {
    return groupOf(std::vector<int>(std::begin(axes), std::end(axes)), rank);
  }
  /// The per-rank block shape of a tensor of `globalShape` split per dim
  /// over `sharding`, and where `rank`'s block starts in it.
  std::vector<int64_t> localShape(const std::vector<int64_t> &globalShape,
                                  const std::vector<std::vector<int>> &sharding) const;
  std::vector<int64_t> blockOffsets(const std::vector<int64_t> &globalShape,
                                    const std::vector<std::vector<int>> &sharding,
                                    int64_t rank) const;

  /// "dp,tp" ("-" for none; an axis outside the mesh prints as "<axis 7>").
  template <class Axes = std::vector<int>> std::string axesName(const Axes &axes) const {
    return axesNameOf(std::vector<int>(std::begin(axes), std::end(axes)));
  }
  /// "dp=2,tp=4" ("(one rank)" for a mesh without axes).
  std::string str() const;

  /// Parses "dp=2,tp=4": names are identifiers, 1 to 8 axes, sizes
  /// positive, names unique, at most kMaxDevices ranks. std::nullopt and
  /// `error` set otherwise.
  static std::optional<Mesh> parse(std::string_view spec, std::string &error);

private:
  std::vector<int64_t> groupOf(const std::vector<int> &axes, int64_t rank) const;
  std::string axesNameOf(const std::vector<int> &axes) const;
};

} // namespace shardc::abi

#endif // SHARDC_RUNTIME_ABI_MESH_H
