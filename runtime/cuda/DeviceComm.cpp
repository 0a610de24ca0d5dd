//===- DeviceComm.cpp - NCCL and host-staged MPI collectives --------------===//

#include "runtime/cuda/DeviceComm.h"

#include "runtime/program/KernelRunner.h"
#include "runtime/cuda/CudaCheck.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace shardc::cuda {

DeviceComm::~DeviceComm() = default;

namespace {

ncclDataType_t ncclType(DType t) {
  switch (t) {
  case DType::F32:
    return ncclFloat32;
  case DType::F64:
    return ncclFloat64;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  case DType::I32:
    return ncclInt32;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(rt::Reduction r) {
  switch (r) {
  case rt::Reduction::Max:
    return ncclMax;
  case rt::Reduction::Min:
    return ncclMin;
  default:
    return ncclSum;
  }
}

Axes allAxes(const rt::MeshDesc &mesh) {
  Axes all;
  for (size_t a = 0; a < mesh.sizes.size(); ++a)
    all.push_back(static_cast<int>(a));
  return all;
}

//===----------------------------------------------------------------------===//
// NCCL
//===----------------------------------------------------------------------===//

class NcclComm final : public DeviceComm {
public:
  NcclComm(rt::Communicators &host, const std::vector<Axes> &axesSets) : host_(host) {
    const rt::MeshDesc &mesh = host.mesh();
    const int64_t rank = host.rank(), n = host.numRanks();
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (rank == 0)
      SHARDC_NCCL(ncclGetUniqueId(&id));
    host.broadcast(allAxes(mesh), &id, sizeof(id), 0);
    SHARDC_NCCL(ncclCommInitRank(&world_, static_cast<int>(n), id, static_cast<int>(rank)));
    Axes all = allAxes(mesh);
    comms_[all] = world_;
    std::vector<int64_t> coords = mesh.coords(rank);
    for (const Axes &axes : axesSets) {
      if (comms_.count(axes) || mesh.size(axes) <= 1)
        continue;
      // color: the rank with this rank's coordinates off `axes` and 0 on them.
      std::vector<int64_t> base = coords;
      for (int a : axes)
        base[a] = 0;
      int color = static_cast<int>(mesh.linearRank(base));
      int key = static_cast<int>(mesh.shardIndex(axes, coords));
      ncclComm_t c = nullptr;
      SHARDC_NCCL(ncclCommSplit(world_, color, key, &c, nullptr));
      comms_[axes] = c;
    }
    int version = 0;
    ncclGetVersion(&version);
    version_ = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
               std::to_string(version % 100);
  }

  ~NcclComm() override {
    if (aborted_)
      return;
    for (auto &[axes, c] : comms_)
      if (c != world_)
        ncclCommDestroy(c);
    ncclCommDestroy(world_);
  }

  std::string describe() const override { return "NCCL " + version_; }
  bool capturable() const override { return true; }

  void allgather(const Axes &axes, const void *in, void *out, int64_t bytes,
                 cudaStream_t s) override {
    SHARDC_NCCL(ncclAllGather(in, out, static_cast<size_t>(bytes), ncclUint8, comm(axes), s));
  }
  void allreduce(const Axes &axes, const void *in, void *out, int64_t n, DType dtype,
                 rt::Reduction op, cudaStream_t s) override {
    SHARDC_NCCL(ncclAllReduce(in, out, static_cast<size_t>(n), ncclType(dtype), ncclOp(op),
                              comm(axes), s));
  }
  void reduceScatter(const Axes &axes, const void *in, void *out, int64_t n, DType dtype,
                     rt::Reduction op, cudaStream_t s) override {
    SHARDC_NCCL(ncclReduceScatter(in, out, static_cast<size_t>(n), ncclType(dtype), ncclOp(op),
                                  comm(axes), s));
  }
  void alltoall(const Axes &axes, const void *in, void *out, int64_t bytes,
                cudaStream_t s) override {
    ncclComm_t c = comm(axes);
    int members = 0;
    SHARDC_NCCL(ncclCommCount(c, &members));
    SHARDC_NCCL(ncclGroupStart());
    for (int j = 0; j < members; ++j) {
      SHARDC_NCCL(ncclSend(static_cast<const uint8_t *>(in) + j * bytes,
                           static_cast<size_t>(bytes), ncclUint8, j, c, s));
      SHARDC_NCCL(ncclRecv(static_cast<uint8_t *>(out) + j * bytes, static_cast<size_t>(bytes),
                           ncclUint8, j, c, s));
    }
    SHARDC_NCCL(ncclGroupEnd());
  }
  void sendrecv(const Axes &axes, const void *in, int64_t to, void *out, int64_t from,
                int64_t bytes, cudaStream_t s) override {
    ncclComm_t c = comm(axes);
    SHARDC_NCCL(ncclGroupStart());
    if (to >= 0)
      SHARDC_NCCL(ncclSend(in, static_cast<size_t>(bytes), ncclUint8, static_cast<int>(to), c, s));
    if (from >= 0)
      SHARDC_NCCL(
          ncclRecv(out, static_cast<size_t>(bytes), ncclUint8, static_cast<int>(from), c, s));
    SHARDC_NCCL(ncclGroupEnd());
  }

  void checkAsync() override {
    for (auto &[axes, c] : comms_) {
      ncclResult_t r = ncclSuccess;
      ncclCommGetAsyncError(c, &r);
      if (r != ncclSuccess && r != ncclInProgress) {
        std::string what = std::string("NCCL asynchronous error on the group of mesh axes ") +
                           rt::axesString(axes) + ": " + ncclGetErrorString(r) +
                           " (a peer rank failed or the network broke)";
        abort();
        throwCallError("ncclCommGetAsyncError", what, __FILE__, __LINE__);
      }
    }
  }

  void abort() override {
    if (aborted_)
      return;
    aborted_ = true;
    for (auto &[axes, c] : comms_)
      if (c != world_)
        ncclCommAbort(c);
    ncclCommAbort(world_);
  }

private:
  ncclComm_t comm(const Axes &axes) const {
    auto it = comms_.find(axes);
    if (it == comms_.end())
      throw rt::Error("no NCCL communicator for mesh axes " + rt::axesString(axes) +
                      " (it was not among the program's groups)");
    return it->second;
  }

  rt::Communicators &host_;
  ncclComm_t world_ = nullptr;
  std::map<Axes, ncclComm_t> comms_;
  std::string version_;
  bool aborted_ = false;
};

//===----------------------------------------------------------------------===//
// Host-staged MPI
//===----------------------------------------------------------------------===//

/// Pinned host memory that grows (never inside a capture: not capturable).
struct PinnedBuffer {
  void *p = nullptr;
  int64_t bytes = 0;
  ~PinnedBuffer() {
    if (p)
      cudaFreeHost(p);
  }
  uint8_t *ensure(int64_t n) {
    if (n > bytes) {
      if (p)
        SHARDC_CUDA(cudaFreeHost(p));
      p = nullptr;
      SHARDC_CUDA(cudaMallocHost(&p, static_cast<size_t>(n)));
      bytes = n;
    }
    return static_cast<uint8_t *>(p);
  }
};

class HostStagedComm final : public DeviceComm {
public:
  explicit HostStagedComm(rt::Communicators &host) : host_(host) {}
  std::string describe() const override { return "host-staged MPI"; }
  bool capturable() const override { return false; }

  void allgather(const Axes &axes, const void *in, void *out, int64_t bytes,
                 cudaStream_t s) override {
    int64_t n = host_.groupSize(axes);
    uint8_t *hin = down(a_, in, bytes, s);
    uint8_t *hout = b_.ensure(n * bytes);
    host_.allgather(axes, hin, hout, bytes);
    up(out, hout, n * bytes, s);
  }
  void allreduce(const Axes &axes, const void *in, void *out, int64_t n, DType dtype,
                 rt::Reduction op, cudaStream_t s) override {
    int64_t members = host_.groupSize(axes), es = rt::dtype_size(dtype);
    uint8_t *hin = down(a_, in, n * es, s);
    uint8_t *all = b_.ensure(members * n * es);
    host_.allgather(axes, hin, all, n * es);
    rt::reduceBlocks(all, members, n, dtype, op, hin);
    up(out, hin, n * es, s);
  }
  void reduceScatter(const Axes &axes, const void *in, void *out, int64_t n, DType dtype,
                     rt::Reduction op, cudaStream_t s) override {
    int64_t members = host_.groupSize(axes), es = rt::dtype_size(dtype);
    uint8_t *hin = down(a_, in, members * n * es, s);
    uint8_t *recv = b_.ensure(members * n * es);
    host_.alltoall(axes, hin, recv, n * es);
    rt::reduceBlocks(recv, members, n, dtype, op, hin);
    up(out, hin, n * es, s);
  }
  void alltoall(const Axes &axes, const void *in, void *out, int64_t bytes,
                cudaStream_t s) override {
    int64_t n = host_.groupSize(axes);
    uint8_t *hin = down(a_, in, n * bytes, s);
    uint8_t *hout = b_.ensure(n * bytes);
    host_.alltoall(axes, hin, hout, bytes);
    up(out, hout, n * bytes, s);
  }
  void sendrecv(const Axes &axes, const void *in, int64_t to, void *out, int64_t from,
                int64_t bytes, cudaStream_t s) override {
    uint8_t *hin = to >= 0 ? down(a_, in, bytes, s) : nullptr;
    uint8_t *hout = b_.ensure(std::max<int64_t>(bytes, 1));
    host_.wait(host_.isendrecv(axes, hin, to, hout, from, bytes, 0));
    if (from >= 0)
      up(out, hout, bytes, s);
  }
  void checkAsync() override {}
  void abort() override {}

private:
  uint8_t *down(PinnedBuffer &buf, const void *src, int64_t bytes, cudaStream_t s) {
    uint8_t *h = buf.ensure(std::max<int64_t>(bytes, 1));
    SHARDC_CUDA(cudaMemcpyAsync(h, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, s));
    SHARDC_CUDA(cudaStreamSynchronize(s));
    return h;
  }
  void up(void *dst, const uint8_t *h, int64_t bytes, cudaStream_t s) {
    SHARDC_CUDA(cudaMemcpyAsync(dst, h, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, s));
    SHARDC_CUDA(cudaStreamSynchronize(s));
  }
  rt::Communicators &host_;
  PinnedBuffer a_, b_;
};

} // namespace

std::unique_ptr<DeviceComm> makeNcclComm(rt::Communicators &host,
                                         const std::vector<Axes> &axesSets) {
  return std::make_unique<NcclComm>(host, axesSets);
}

std::unique_ptr<DeviceComm> makeHostStagedComm(rt::Communicators &host) {
  return std::make_unique<HostStagedComm>(host);
}

} // namespace shardc::cuda
