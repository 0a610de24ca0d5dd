//===- CudaBackend.cpp - compiled steps on NVIDIA GPUs --------------------===//
//
// The Backend (runtime/program/Backend.h) that runs a compiled step on one
// GPU per rank:
//  - one cudaMalloc per arena of the memory plan (the step's views are
//    offsets into them) and a host copy per arena for the boundary tensors;
//    the "host" arena of offloaded activations (-xf-offload-activations) is
//    pinned host memory instead, which the step addresses directly;
//  - activation offload's copies (shardc_rt_copy_start / _wait) on a copy
//    stream of their own, joined to the compute stream by an event pair as
//    the collectives are, so the copy engine moves activations to and from
//    the host while the compute stream goes on;
//  - every call decoded once (CallDecoder.h) and run by cuBLASLt (Gemm.h) or
//    the own kernels (DeviceKernels.h) on the compute stream;
//  - collectives on a communication stream: collectiveStart records an event
//    on the compute stream, the communication stream waits for it and runs
//    the exchange (DeviceComm.h: NCCL, or host-staged MPI), collectiveWait
//    makes the compute stream wait for the exchange's event. The compiler's
//    schedule (-rt-schedule-collectives) put compute between the two, so the
//    exchange overlaps it;
//  - each entry (shardc_step, shardc_eval) runs eagerly once (cuBLASLt
//    heuristics, workspaces), is captured as a CUDA graph on its second run
//    and replayed afterwards; the step's seed and index are read by the
//    kernels from device memory, updated before every launch;
//  - the GEMMs with epilogues the compiler chose (-xf-fuse-epilogues:
//    xf.matmul_bias, _bias_gelu, _dgelu, _bgrad) run as one cuBLASLt call
//    with the epilogue (Bias, BiasGeluAux, DGelu, BGrad), or, where
//    cuBLASLt has none for the layout or dtype, the GEMM then the
//    epilogue's kernel; xf.multi_adamw (the compiler's one optimizer call)
//    is one multi-tensor launch; the one peephole left: an add whose sum is
//    normalised next becomes the norm kernel's fused residual input;
//  - errors: every CUDA/cuBLASLt/NCCL call checked (CudaCheck.h: call, error
//    and rank); bad token ids and targets found by kernels are reported
//    after the entry, naming the call; NCCL async errors are polled while
//    waiting for the step, so a failed peer ends the job instead of hanging.
//
//===----------------------------------------------------------------------===//

#include "runtime/program/Backend.h"

#include "runtime/cuda/CudaCheck.h"
#include "runtime/cuda/DeviceComm.h"
#include "runtime/cuda/DeviceKernels.h"
#include "runtime/cuda/Gemm.h"
#include "runtime/cuda/LinearCrossEntropy.h"
#include "runtime/cuda/LossInternal.h"
#include "runtime/program/CallDecoder.h"
#include "runtime/program/KernelRunner.h"
#include "runtime/program/KernelScratch.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <thread>

namespace shardc::cuda {

using namespace rt;

namespace {

/// Device memory that only grows, and only outside a graph capture.
struct DeviceBuffer {
  void *p = nullptr;
  int64_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (p)
      cudaFree(p);
  }
};

TView view(void *p, const TensorType &t) { return {p, t.dtype}; }
TView cview(const void *p, const TensorType &t) { return {const_cast<void *>(p), t.dtype}; }

Dims dimsOf(const std::vector<int64_t> &v, const DecodedCall &d) {
  if (v.size() > static_cast<size_t>(Dims::kMax))
    failCall(d, "the CUDA backend supports tensors of rank <= " + std::to_string(Dims::kMax));
  Dims r;
  r.rank = static_cast<int>(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    r.d[i] = v[i];
  return r;
}

/// The first of `vars` that the launcher (Open MPI, MPICH, Slurm, MVAPICH,
/// torchrun-style) set, as an integer; `fallback` when none is set.
int launcherValue(std::initializer_list<const char *> vars, int fallback) {
  for (const char *var : vars)
    if (const char *v = std::getenv(var))
      return std::atoi(v);
  return fallback;
}

/// The local rank on this node (the global rank when the launcher does not say).
int localRank(int64_t rank) {
  return launcherValue({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                        "MV2_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"},
                       static_cast<int>(rank));
}

/// The number of ranks on this node (0 when the launcher does not say).
int localSize() {
  return launcherValue({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE",
                        "MV2_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE"},
                       0);
}

int64_t align256(int64_t n) { return (n + 255) / 256 * 256; }

class CudaBackend final : public Backend {
public:
  CudaBackend(const Program &program, Communicators *comm, const CudaOptions &options)
      : program_(program), comm_(comm), rank_(comm ? comm->rank() : 0) {
    errorRank() = static_cast<int>(rank_);
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
      throw Error("--device cuda: no CUDA device on this node (cudaGetDeviceCount: " +
                  std::string(e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
    device_ = localRank(rank_) % count;
    SHARDC_CUDA(cudaSetDevice(device_));
    cudaDeviceProp prop{};
    SHARDC_CUDA(cudaGetDeviceProperties(&prop, device_));
    deviceName_ = prop.name;
    if (prop.major < 8)
      throw Error("GPU " + std::to_string(device_) + " (" + deviceName_ +
                  ") has compute capability " + std::to_string(prop.major) + "." +
                  std::to_string(prop.minor) + "; the CUDA backend needs 8.0 or newer (bf16)");

    // Decode every call once; refuse what the GPU does not run up front.
    std::vector<int64_t> coords = program.mesh.coords(rank_);
    for (size_t i = 0; i < program.calls.size(); ++i) {
      calls_.push_back(decodeCall(program, i, coords));
      const DecodedCall &d = *calls_.back();
      if (d.f64)
        failCall(d, "computes in f64, which the CUDA backend does not run (compile with "
                    "--precision fp32 or bf16)");
      int64_t headDim = 0; // q's last dim (qkv's for the packed ops)
      switch (d.kind) {
      case OpKind::Attention:
      case OpKind::PackedAttention:
        headDim = d.operands[0].shape.back();
        break;
      case OpKind::AttentionGrad:
      case OpKind::PackedAttentionGrad:
        headDim = d.operands[1].shape.back();
        break;
      default:
        break;
      }
      if (headDim > kMaxAttentionHeadDim)
        failCall(d, "head size " + std::to_string(headDim) + " exceeds the " +
                        std::to_string(kMaxAttentionHeadDim) + " the attention kernels run");
    }

    SHARDC_CUDA(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    SHARDC_CUDA(cudaStreamCreateWithFlags(&commStream_, cudaStreamNonBlocking));
    SHARDC_CUDA(cudaStreamCreateWithFlags(&copyStream_, cudaStreamNonBlocking));

    // Arenas: one allocation each, zero-filled as on the CPU (on the compute
    // stream: a non-blocking stream does not wait for the legacy one).
    size_t freeBytes = 0, totalBytes = 0;
    SHARDC_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
    for (const ArenaDesc &a : program.arenas) {
      void *p = nullptr;
      size_t bytes = static_cast<size_t>(std::max<int64_t>(a.bytes, 1));
      if (a.name == kHostArenaName) {
        // Offloaded activations: pinned host memory the step addresses
        // directly (one address space), copied on the copy stream.
        cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
        if (err != cudaSuccess) {
          cudaGetLastError();
          throw Error("rank " + std::to_string(rank_) + ": cannot pin " + std::to_string(a.bytes) +
                      " bytes of host memory for the offloaded activations: " +
                      cudaGetErrorString(err));
        }
        std::memset(p, 0, bytes);
        arenas_.push_back(p);
        host_.push_back(static_cast<uint8_t *>(p));
        pinned_.push_back(true);
        continue;
      }
      cudaError_t err = cudaMalloc(&p, bytes);
      if (err != cudaSuccess) {
        cudaGetLastError(); // clear the sticky-free allocation error
        throw Error("rank " + std::to_string(rank_) + ": cannot allocate arena '" + a.name +
                    "' (" + std::to_string(a.bytes) + " bytes) on GPU " +
                    std::to_string(device_) + " (" + deviceName_ + "): " +
                    cudaGetErrorString(err) + "; the memory plan needs " +
                    std::to_string(program.plannedPeakBytes) + " bytes per rank, the GPU had " +
                    std::to_string(freeBytes) + " of " + std::to_string(totalBytes) +
                    " free (use more ranks, ZeRO/FSDP, or smaller micro-batches)");
      }
      arenas_.push_back(p);
      SHARDC_CUDA(cudaMemsetAsync(p, 0, bytes, compute_));
      void *h = std::calloc(bytes, 1); // pages are committed only where written
      if (!h)
        throw Error("cannot allocate the host copy of arena '" + a.name + "'");
      host_.push_back(static_cast<uint8_t *>(h));
      pinned_.push_back(false);
    }

    for (cudaEvent_t &ev : lossEvents_)
      SHARDC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    SHARDC_CUDA(cudaMalloc(&scalars_, sizeof(StepScalars)));
    SHARDC_CUDA(cudaMallocHost(&hostScalars_, sizeof(StepScalars)));
    SHARDC_CUDA(cudaMalloc(&errors_, sizeof(KernelError) * std::max<size_t>(calls_.size(), 1)));
    SHARDC_CUDA(cudaMemsetAsync(errors_, 0, sizeof(KernelError) * std::max<size_t>(calls_.size(), 1),
                                compute_));
    SHARDC_CUDA(cudaStreamSynchronize(compute_));
    SHARDC_CUDA(cudaMalloc(&groupCount_, sizeof(int32_t) * 2));
    gemm_ = std::make_unique<Gemm>();

    if (comm && comm->numRanks() > 1) {
      // NCCL refuses two ranks on one GPU: with more ranks than GPUs on this
      // node, --comm auto stages through the host and --comm nccl says why not.
      const bool shared = localSize() > count;
      if (shared && options.comm == "nccl")
        throw Error("--comm nccl: " + std::to_string(localSize()) + " ranks on this node share " +
                    std::to_string(count) +
                    " GPU(s), and NCCL needs one GPU per rank; use --comm mpi (host-staged) "
                    "or launch at most one rank per GPU");
      bool nccl = options.comm == "nccl" || (options.comm == "auto" && !shared);
      deviceComm_ = nccl ? makeNcclComm(*comm, KernelRunner::axesSetsNeeded(program))
                         : makeHostStagedComm(*comm);
    }
    graphs_ = options.graphs && (!deviceComm_ || deviceComm_->capturable());
  }

  ~CudaBackend() override {
    // Nothing here may throw: a failed device is reported by the run. After
    // an error (unwinding) peers may be inside a collective: abort the NCCL
    // communicators instead of waiting for them to quiesce.
    if (std::uncaught_exceptions() > 0 && deviceComm_)
      deviceComm_->abort();
    cudaDeviceSynchronize();
    for (auto &[id, exec] : graphExec_)
      if (exec)
        cudaGraphExecDestroy(exec);
    for (cudaEvent_t ev : events_)
      cudaEventDestroy(ev);
    for (cudaEvent_t ev : lossEvents_)
      if (ev)
        cudaEventDestroy(ev);
    deviceComm_.reset();
    gemm_.reset();
    workspace_.reset();
    for (size_t i = 0; i < arenas_.size(); ++i) {
      if (pinned_[i]) {
        cudaFreeHost(arenas_[i]);
      } else {
        cudaFree(arenas_[i]);
        std::free(host_[i]);
      }
    }
    for (cudaEvent_t ev : copyEvents_)
      cudaEventDestroy(ev);
    if (scalars_)
      cudaFree(scalars_);
    if (hostScalars_)
      cudaFreeHost(hostScalars_);
    if (errors_)
      cudaFree(errors_);
    if (groupCount_)
      cudaFree(groupCount_);
    if (compute_)
      cudaStreamDestroy(compute_);
    if (commStream_)
      cudaStreamDestroy(commStream_);
    if (copyStream_)
      cudaStreamDestroy(copyStream_);
  }

  std::string describe() const override {
    return "cuda: GPU " + std::to_string(device_) + " (" + deviceName_ + "), " +
           (deviceComm_ ? deviceComm_->describe() : std::string("one rank")) + ", " +
           (graphs_ ? "CUDA graphs" : "eager launches");
  }

  void *arena(int i) override { return arenas_.at(i); }
  uint8_t *hostArena(int i) override { return host_.at(i); }
  void toDevice(int i, int64_t offset, int64_t bytes) override {
    if (pinned_.at(i))
      return; // the host arena is the step's own buffer
    SHARDC_CUDA(cudaMemcpyAsync(static_cast<uint8_t *>(arenas_.at(i)) + offset,
                                host_.at(i) + offset, static_cast<size_t>(bytes),
                                cudaMemcpyHostToDevice, compute_));
    SHARDC_CUDA(cudaStreamSynchronize(compute_));
  }
  void toHost(int i, int64_t offset, int64_t bytes) override {
    if (pinned_.at(i)) {
      SHARDC_CUDA(cudaStreamSynchronize(compute_));
      return;
    }
    SHARDC_CUDA(cudaMemcpyAsync(host_.at(i) + offset,
                                static_cast<uint8_t *>(arenas_.at(i)) + offset,
                                static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, compute_));
    SHARDC_CUDA(cudaStreamSynchronize(compute_));
  }

  void run(const std::function<void()> &entry, int entryId, const StepContext &step) override;
  void kernel(int call, void **buffers) override;
  int collectiveStart(int call, int comm, const void *in, void *out, void *scratch) override;
  void collectiveWait(int handle) override;
  void copy(void *dst, const void *src, int64_t bytes) override;
  int copyStart(void *dst, const void *src, int64_t bytes) override;
  void copyWait(int handle) override;

  void setTiming(bool enabled) override {
    timing_ = enabled;
    if (enabled)
      graphs_ = false;
  }
  std::map<std::string, double> kernelSeconds() const override { return kernelSeconds_; }
  std::map<std::string, double> collectiveSeconds() const override { return collectiveSeconds_; }
  int64_t bytesOutsidePlan() const override {
    int64_t bytes = (workspace_ ? workspace_->bytes : 0) + (gemm_ ? gemm_->workspaceBytes() : 0);
    for (const auto *pool : {&collectiveBuffers_, &adamDescriptors_})
      for (const auto &[key, buffer] : *pool)
        bytes += buffer ? buffer->bytes : 0;
    return bytes;
  }
  void resetTiming() override {
    kernelSeconds_.clear();
    collectiveSeconds_.clear();
  }

private:
  const DecodedCall &decoded(int call, bool collective) const {
    if (call < 0 || call >= static_cast<int>(calls_.size()))
      throw Error(std::string(collective ? "collective" : "kernel") + " call " +
                  std::to_string(call) + " is outside the call table (" +
                  std::to_string(calls_.size()) + " calls)");
    const DecodedCall &d = *calls_[call];
    if (collective != isCollectiveKind(d.kind))
      failCall(d, collective ? "is not a collective; the step must run it with shardc_rt_kernel"
                             : "is a collective; the step must run it with shardc_rt_collective");
    return d;
  }

  /// Attention (or its gradient, `backward`) over a block of the query rows
  /// (d.block: rows [offset, offset + local) of a sequence of global keys):
  /// the kernels take whole sequences, so the block is placed in zeroed
  /// full-length copies of q and out (and dout, dq) in the call's scratch
  /// (KernelScratch's attentionRowBlockBytes). The other rows are zero and
  /// change nothing the block reads: a zero dout row adds nothing to dk or dv
  /// (its delta and dP are zero). Correct, but every rank computes all rows:
  /// the kernels do not yet take a query offset.
  void attentionRowBlock(const DecodedCall &d, void **buf, cudaStream_t s, bool backward) {
    const auto &ins = d.operands;
    const auto &q = ins[backward ? 1 : 0].shape; // the block: [B, Sq, Hq, D]
    const int64_t B = q[0], Sq = q[1], Hq = q[2], D = q[3], Skv = d.block.global;
    const int64_t Hkv = ins[backward ? 2 : 1].shape[2];
    const DType t = ins[backward ? 1 : 0].dtype;
    const int64_t elem = dtype_size(t), rowBytes = Hq * D * elem;
    const int64_t one = scratch::attentionRowCopyBytes(B, Skv, Hq, D, elem);
    const int tensors = backward ? 4 : 2;
    uint8_t *base =
        scratch(d, buf, scratch::attentionRowBlockBytes(B, Skv, Hq, D, elem, tensors, backward));
    auto full = [&](int i) { return TView{base + i * one, t}; };
    // Block rows in and out of a full-length [B, Skv, Hq, D] copy.
    auto place = [&](void *dst, const void *src) {
      SHARDC_CUDA(cudaMemcpy2DAsync(static_cast<uint8_t *>(dst) + d.block.offset * rowBytes,
                                    Skv * rowBytes, src, Sq * rowBytes, Sq * rowBytes, B,
                                    cudaMemcpyDeviceToDevice, s));
    };
    auto take = [&](void *dst, const void *src) {
      SHARDC_CUDA(cudaMemcpy2DAsync(dst, Sq * rowBytes,
                                    static_cast<const uint8_t *>(src) + d.block.offset * rowBytes,
                                    Skv * rowBytes, Sq * rowBytes, B, cudaMemcpyDeviceToDevice, s));
    };
    auto arg = [&](size_t i) { return TView{buf[i], ins[i].dtype}; };
    size_t nIn = ins.size();
    if (!backward) {
      SHARDC_CUDA(cudaMemsetAsync(base, 0, static_cast<size_t>(one), s));
      place(full(0).p, buf[0]);
      attention_forward(full(0), arg(1), arg(2), full(1), nullptr, B, Skv, Hq, Hkv, D, d.causal,
                        d.scale, s);
      take(buf[nIn], full(1).p);
      return;
    }
    // Operands dout, q, k, v, out; results dq, dk, dv. Full copies: q, out,
    // dout (zeroed), dq.
    SHARDC_CUDA(cudaMemsetAsync(base, 0, static_cast<size_t>(3 * one), s));
    place(full(0).p, buf[1]);
    place(full(1).p, buf[4]);
    place(full(2).p, buf[0]);
    attention_backward(full(2), full(0), arg(2), arg(3), full(1), full(3), TView{buf[nIn + 1], t},
                       TView{buf[nIn + 2], t}, B, Skv, Hq, Hkv, D, d.causal, d.scale,
                       base + 4 * one, s);
    take(buf[nIn], full(3).p);
  }

  /// Attention (or its gradient) on a packed qkv [B, S, Hkv, G + 2, D]: the
  /// kernels take dense tensors, so q, k and v are unpacked into the call's
  /// scratch (KernelScratch's packedAttentionLayout) by strided copies, and
  /// the backward's dq, dk, dv packed back into dqkv's slots the same way.
  void packedAttention(const DecodedCall &d, void **buf, cudaStream_t s, bool backward) {
    const auto &ins = d.operands;
    const size_t nIn = ins.size();
    const TensorType &qkvT = ins[backward ? 1 : 0];
    for (size_t i = 0; i < nIn; ++i)
      if (ins[i].dtype != qkvT.dtype || d.results[0].dtype != qkvT.dtype)
        failCall(d, "every operand and the result must share qkv's dtype on the GPU");
    const auto &p = qkvT.shape;
    const int64_t B = p[0], S = p[1], Hkv = p[2], G = p[3] - 2, D = p[4], Hq = Hkv * G;
    const DType t = qkvT.dtype;
    const int64_t elem = dtype_size(t);
    const scratch::PackedAttentionLayout l =
        scratch::packedAttentionLayout(B, S, Hkv, G, D, elem, backward);
    if (l.total == 0)
      return; // nothing to attend
    uint8_t *base = scratch(d, buf, l.total);
    auto dense = [&](int64_t offset) { return TView{base + offset, t}; };
    // Rows of qkv: one per (b, s, kv head), its G + 2 head slots of D.
    const int64_t rows = B * S * Hkv, pitch = (G + 2) * D * elem;
    // `heads` slots from `slot` of every qkv row <-> a dense [rows, heads * D].
    auto unpack = [&](int64_t offset, const void *qkv, int64_t slot, int64_t heads) {
      SHARDC_CUDA(cudaMemcpy2DAsync(base + offset, heads * D * elem,
                                    static_cast<const uint8_t *>(qkv) + slot * D * elem, pitch,
                                    heads * D * elem, rows, cudaMemcpyDeviceToDevice, s));
    };
    auto pack = [&](void *qkv, int64_t slot, int64_t heads, int64_t offset) {
      SHARDC_CUDA(cudaMemcpy2DAsync(static_cast<uint8_t *>(qkv) + slot * D * elem, pitch,
                                    base + offset, heads * D * elem, heads * D * elem, rows,
                                    cudaMemcpyDeviceToDevice, s));
    };
    const void *qkv = buf[backward ? 1 : 0];
    unpack(l.q, qkv, 0, G);
    unpack(l.k, qkv, G, 1);
    unpack(l.v, qkv, G + 1, 1);
    if (!backward) {
      attention_forward(dense(l.q), dense(l.k), dense(l.v), TView{buf[nIn], t}, nullptr, B, S, Hq,
                        Hkv, D, d.causal, d.scale, s);
      return;
    }
    // Operands dout, qkv, out; result dqkv.
    attention_backward(TView{buf[0], t}, dense(l.q), dense(l.k), dense(l.v), TView{buf[2], t},
                       dense(l.dq), dense(l.dk), dense(l.dv), B, S, Hq, Hkv, D, d.causal, d.scale,
                       base + l.workspace, s);
    pack(buf[nIn], 0, G, l.dq);
    pack(buf[nIn], G, 1, l.dk);
    pack(buf[nIn], G + 1, 1, l.dv);
  }

  /// Concat (split): per operand (result), its rows of the dims before `dim`
  /// copied to (from) its column offset in the joined tensor's rows.
  void concatOrSplit(const DecodedCall &d, void **buf, cudaStream_t s) {
    const bool concat = d.kind == OpKind::Concat;
    const std::vector<TensorType> &parts = concat ? d.operands : d.results;
    const TensorType &whole = concat ? d.results[0] : d.operands[0];
    auto *joined = static_cast<uint8_t *>(buf[concat ? d.operands.size() : 0]);
    void **partBuf = concat ? buf : buf + 1;
    const Split3 w(whole.shape, d.dim, dtype_size(whole.dtype));
    const int64_t wholeRow = w.dimSize * w.inner;
    int64_t at = 0; // the part's byte offset in a row of the joined tensor
    for (size_t i = 0; i < parts.size(); ++i) {
      const int64_t width = parts[i].shape[d.dim] * w.inner;
      uint8_t *part = static_cast<uint8_t *>(partBuf[i]);
      uint8_t *dst = concat ? joined + at : part;
      const uint8_t *src = concat ? part : joined + at;
      const size_t dstPitch = concat ? wholeRow : width, srcPitch = concat ? width : wholeRow;
      if (width > 0 && w.outer == 1) // one row (dim 0): no pitch limit
        SHARDC_CUDA(cudaMemcpyAsync(dst, src, width, cudaMemcpyDeviceToDevice, s));
      else if (width > 0 && w.outer > 1)
        SHARDC_CUDA(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, w.outer,
                                      cudaMemcpyDeviceToDevice, s));
      at += width;
    }
  }

  /// A kernel's scratch of `bytes`: the call's planned region
  /// (runtime/program/KernelScratch.h; the buffer after its results), or the
  /// shared workspace for a call the plan gave none (a program planned
  /// without scratch, the tests' single calls).
  uint8_t *scratch(const DecodedCall &d, void **buf, int64_t bytes) {
    if (d.scratch <= 0)
      return workspace(bytes);
    if (bytes > d.scratch)
      failCall(d, "internal: the kernel needs " + std::to_string(bytes) +
                      " bytes of scratch, the plan gave " + std::to_string(d.scratch));
    return static_cast<uint8_t *>(buf[d.operands.size() + d.results.size()]);
  }

  /// The shared kernel workspace (compute stream only), at least `bytes`.
  uint8_t *workspace(int64_t bytes) {
    if (!workspace_ || workspace_->bytes < bytes) {
      if (capturing_)
        throw Error("internal: the kernel workspace grew during CUDA graph capture");
      SHARDC_CUDA(cudaStreamSynchronize(compute_));
      dropGraphs(); // captured graphs hold the old buffer's address
      workspace_ = std::make_unique<DeviceBuffer>();
      SHARDC_CUDA(cudaMalloc(&workspace_->p, static_cast<size_t>(align256(bytes))));
      workspace_->bytes = align256(bytes);
    }
    return static_cast<uint8_t *>(workspace_->p);
  }
  /// A buffer of its own per key (collective staging), stable across steps.
  uint8_t *ownBuffer(std::map<int, std::unique_ptr<DeviceBuffer>> &pool, int key, int64_t bytes) {
    auto &b = pool[key];
    if (!b || b->bytes < bytes) {
      if (capturing_)
        throw Error("internal: a collective's staging buffer grew during CUDA graph capture");
      SHARDC_CUDA(cudaDeviceSynchronize());
      if (b)
        dropGraphs(); // captured graphs hold the old buffer's address
      b = std::make_unique<DeviceBuffer>();
      SHARDC_CUDA(cudaMalloc(&b->p, static_cast<size_t>(align256(std::max<int64_t>(bytes, 1)))));
      b->bytes = align256(std::max<int64_t>(bytes, 1));
    }
    return static_cast<uint8_t *>(b->p);
  }
  /// Forgets every captured graph (recaptured on their next runs).
  void dropGraphs() {
    for (auto &[key, exec] : graphExec_)
      if (exec) {
        cudaGraphExecDestroy(exec);
        exec = nullptr;
      }
  }
  cudaEvent_t event(size_t i) {
    while (events_.size() <= i) {
      cudaEvent_t ev;
      SHARDC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      events_.push_back(ev);
    }
    return events_[i];
  }

  void runKernel(const DecodedCall &d, void **buf);
  /// Any einsum matmul: operands permuted or widened into the workspace when
  /// cuBLASLt cannot read them as they are.
  void runMatmul(const DecodedCall &d, void **buf, void *out);
  void runCrossEntropy(const DecodedCall &d, void **buf);
  /// Sums an i32 over the group on `axes` in place (device scalar).
  void groupAllGatherStats(const Axes &axes, float *stats, int64_t floats, float *gathered);
  void groupSumCount(const Axes &axes, int32_t *count);
  /// Runs `exchange` on the communication stream between the compute
  /// stream's work before it and after it.
  void onCommStream(const std::function<void(cudaStream_t)> &exchange);
  cudaEvent_t lossEvents_[2] = {nullptr, nullptr};

  /// Deferred work that may merge with the next call.
  void flushPending();
  bool tryFuse(const DecodedCall &d, void **buf);
  bool tryFuseResidualNorm(const DecodedCall &d, void **buf);
  /// Runs a kernel call now (operands aliasing results copied first).
  void launch(const DecodedCall &d, void **buffers);
  /// A plain 2-d GEMM's arguments (gemmLayout), C at `out`.
  GemmArgs gemmArgs(const DecodedCall &d, void **buf, void *out) const;
  /// Whether `d`'s matmul is one 2-d GEMM cuBLASLt reads as it is.
  static bool gemmLayout(const DecodedCall &d);
  /// xf.matmul_bias / _bias_gelu / _dgelu / _bgrad: one GEMM with the
  /// cuBLASLt epilogue, else the GEMM and the epilogue's own kernel.
  void runMatmulEpilogue(const DecodedCall &d, void **buf);
  /// xf.adamw and xf.multi_adamw: one multi-tensor launch.
  void runAdamW(const DecodedCall &d, void **buf);
  std::vector<void *> ptrs_; ///< launch(): a call's buffers, some redirected

  /// Waits for the compute stream, polling NCCL for asynchronous errors.
  void waitForDevice();
  void checkKernelErrors();

  void time(std::map<std::string, double> &table, const std::string &name,
            std::chrono::steady_clock::time_point start) {
    waitForDevice();
    table[name] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  const Program &program_;
  Communicators *comm_;
  int64_t rank_;
  int device_ = 0;
  std::string deviceName_;
  std::vector<std::unique_ptr<DecodedCall>> calls_;
  std::vector<void *> arenas_;
  std::vector<uint8_t *> host_;
  std::vector<bool> pinned_; ///< per arena: pinned host memory (the host arena)
  cudaStream_t compute_ = nullptr, commStream_ = nullptr, copyStream_ = nullptr;
  /// Activation copies in flight: per handle its "ready" (compute) and
  /// "done" (copy stream) events.
  std::vector<cudaEvent_t> copyEvents_;
  std::vector<bool> copyInFlight_;
  std::vector<cudaEvent_t> events_;
  StepScalars *scalars_ = nullptr, *hostScalars_ = nullptr;
  KernelError *errors_ = nullptr;
  int32_t *groupCount_ = nullptr;
  std::unique_ptr<Gemm> gemm_;
  std::unique_ptr<DeviceComm> deviceComm_;
  std::unique_ptr<DeviceBuffer> workspace_;
  std::map<int, std::unique_ptr<DeviceBuffer>> collectiveBuffers_, adamDescriptors_;
  std::map<int, std::vector<AdamWTensor>> adamUploaded_;

  // The entry being run.
  StepContext step_;
  bool training_ = false;
  bool graphs_ = true, capturing_ = false, timing_ = false;
  std::map<int, bool> warmed_;
  std::map<int, cudaGraphExec_t> graphExec_;

  // Collectives in flight: handle -> event slot of their completion.
  std::vector<bool> inFlight_;

  // Pending fusions.
  struct PendingAdd {
    const DecodedCall *d = nullptr;
    void *buf[3] = {};
  } pendingAdd_;
  std::map<std::string, double> kernelSeconds_, collectiveSeconds_;
};

//===----------------------------------------------------------------------===//
// Entries, graphs and errors
//===----------------------------------------------------------------------===//

void CudaBackend::run(const std::function<void()> &entry, int entryId, const StepContext &step) {
  step_ = step;
  training_ = step.training;
  // Nothing of an entry that failed half-way carries over.
  pendingAdd_ = PendingAdd{};
  std::fill(inFlight_.begin(), inFlight_.end(), false);
  capturing_ = false;
  const int key = entryId * 2 + (step.training ? 1 : 0);
  // The step scalars go up before the launch, outside any graph.
  hostScalars_->seed = step.seed;
  hostScalars_->step = step.step;
  SHARDC_CUDA(cudaMemcpyAsync(scalars_, hostScalars_, sizeof(StepScalars), cudaMemcpyHostToDevice,
                              compute_));
  auto eager = [&] {
    entry();
    flushPending();
  };
  if (!graphs_ || !warmed_[key]) {
    eager();
    warmed_[key] = true;
  } else {
    cudaGraphExec_t &exec = graphExec_[key];
    if (!exec) {
      SHARDC_CUDA(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal));
      capturing_ = true;
      cudaGraph_t graph = nullptr;
      try {
        eager();
      } catch (...) {
        capturing_ = false;
        cudaStreamEndCapture(compute_, &graph);
        if (graph)
          cudaGraphDestroy(graph);
        throw;
      }
      capturing_ = false;
      SHARDC_CUDA(cudaStreamEndCapture(compute_, &graph));
      cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
      if (err != cudaSuccess) {
        exec = nullptr;
        SHARDC_CUDA(err);
      }
    }
    SHARDC_CUDA(cudaGraphLaunch(exec, compute_));
  }
  waitForDevice();
  checkKernelErrors();
}

void CudaBackend::waitForDevice() {
  const char *env = std::getenv("SHARDC_COMM_TIMEOUT_S");
  const double timeout = env ? std::atof(env) : 600.0;
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    cudaError_t e = cudaStreamQuery(compute_);
    if (e == cudaSuccess)
      e = cudaStreamQuery(commStream_);
    if (e == cudaSuccess)
      break;
    if (e != cudaErrorNotReady)
      SHARDC_CUDA(e);
    if (deviceComm_)
      deviceComm_->checkAsync();
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout > 0 && waited > timeout) {
      if (deviceComm_)
        deviceComm_->abort();
      throw Error("rank " + std::to_string(rank_) + ": the step has not finished after " +
                  std::to_string(static_cast<int>(waited)) +
                  " s (SHARDC_COMM_TIMEOUT_S); a peer rank is gone or stuck");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void CudaBackend::checkKernelErrors() {
  std::vector<KernelError> errs(calls_.size());
  if (errs.empty())
    return;
  SHARDC_CUDA(cudaMemcpy(errs.data(), errors_, sizeof(KernelError) * errs.size(),
                         cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < errs.size(); ++i) {
    const KernelError &e = errs[i];
    if (e.code == kNoError)
      continue;
    SHARDC_CUDA(cudaMemsetAsync(errors_, 0, sizeof(KernelError) * errs.size(), compute_));
    SHARDC_CUDA(cudaStreamSynchronize(compute_));
    const char *what = e.code == kBadTokenId ? "token id" : "target";
    failCall(*calls_[i], std::string(what) + " " + std::to_string(e.value) + " at position " +
                             std::to_string(e.position) + " is outside the vocabulary [0, " +
                             std::to_string(e.limit) + ")");
  }
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

void CudaBackend::kernel(int call, void **buffers) {
  const DecodedCall &d = decoded(call, false);
  auto start = std::chrono::steady_clock::now();
  if (tryFuse(d, buffers))
    return;
  flushPending();
  // Deferred calls skip launch()'s alias copies: only calls that need none.
  const bool deferrable = !timing_ && operandsToCopy(d, buffers).empty();
  // The fused kernel reads x and the residual each in its own dtype and forms
  // h in the result's: an add whose one operand is narrower (a bf16 branch
  // into the f32 stream, -xf-fuse-epilogues) fuses too.
  if (d.kind == OpKind::Add && deferrable && d.operands[0].dtype == d.results[0].dtype) {
    // Wait one call for a layernorm/rmsnorm of the sum (the residual add).
    pendingAdd_.d = &d;
    std::copy(buffers, buffers + 3, pendingAdd_.buf);
    return;
  }
  launch(d, buffers);
  if (timing_)
    time(kernelSeconds_, d.op, start);
}

void CudaBackend::launch(const DecodedCall &d, void **buffers) {
  const int call = d.index;
  // Operands that overlap a result in a kernel that is not correct in place
  // are read from a copy (as the CPU runner does).
  size_t numOperands = d.operands.size(), numResults = d.results.size();
  ptrs_.assign(buffers, buffers + numOperands + numResults + (d.scratch > 0 ? 1 : 0));
  void **ptrs = ptrs_.data();
  std::vector<std::pair<size_t, int64_t>> copies; // operand, offset in the alias scratch
  int64_t copyBytes = 0;
  for (size_t i : operandsToCopy(d, ptrs)) {
    copies.push_back({i, copyBytes});
    copyBytes += align256(d.operands[i].bytes());
  }
  if (!copies.empty()) {
    uint8_t *scratch = ownBuffer(collectiveBuffers_, -1 - call, copyBytes);
    for (auto [i, off] : copies) {
      SHARDC_CUDA(cudaMemcpyAsync(scratch + off, ptrs[i],
                                  static_cast<size_t>(d.operands[i].bytes()),
                                  cudaMemcpyDeviceToDevice, compute_));
      ptrs[i] = scratch + off;
    }
  }
  runKernel(d, ptrs);
  SHARDC_CUDA_LAUNCH();
}

bool CudaBackend::gemmLayout(const DecodedCall &d) {
  const auto &e = d.eq;
  return d.batch == 1 && e.out == e.batch + e.lhsFree + e.rhsFree &&
         (e.lhs == e.batch + e.lhsFree + e.contracted ||
          e.lhs == e.batch + e.contracted + e.lhsFree) &&
         (e.rhs == e.batch + e.contracted + e.rhsFree ||
          e.rhs == e.batch + e.rhsFree + e.contracted) &&
         d.operands[0].dtype == d.operands[1].dtype;
}

GemmArgs CudaBackend::gemmArgs(const DecodedCall &d, void **buf, void *out) const {
  GemmArgs g;
  g.transA = d.transA;
  g.transB = d.transB;
  g.m = d.m;
  g.n = d.n;
  g.k = d.k;
  g.a = cview(buf[0], d.operands[0]);
  g.b = cview(buf[1], d.operands[1]);
  g.c = TView{out, d.results[0].dtype};
  g.lda = d.transA ? d.m : d.k;
  g.ldb = d.transB ? d.k : d.n;
  g.ldc = d.n;
  g.strideA = d.m * d.k;
  g.strideB = d.k * d.n;
  g.strideC = d.m * d.n;
  return g;
}

void CudaBackend::runMatmulEpilogue(const DecodedCall &d, void **buf) {
  const auto &ins = d.operands;
  const auto &outs = d.results;
  void **res = buf + ins.size();
  cudaStream_t s = compute_;
  // cuBLASLt's bias is one value per column of the 2-d C, i.e. per element
  // of all the rhs-free letters; the op's bias runs along the result's last
  // dim only: the same where that is the one rhs-free letter.
  const bool biasFits =
      (d.kind != OpKind::MatmulBias && d.kind != OpKind::MatmulBiasGelu) ||
      (d.eq.rhsFree.size() == 1 && ins[2].numel() == d.n);
  if (gemmLayout(d) && biasFits) {
    GemmArgs g = gemmArgs(d, buf, res[0]);
    switch (d.kind) {
    case OpKind::MatmulBias:
      g.epilogue = Epilogue::Bias;
      g.bias = cview(buf[2], ins[2]);
      break;
    case OpKind::MatmulBiasGelu:
      g.epilogue = Epilogue::BiasGeluAux;
      g.bias = cview(buf[2], ins[2]);
      g.aux = view(res[1], outs[1]);
      break;
    case OpKind::MatmulDGelu:
      g.epilogue = Epilogue::DGelu;
      g.aux = cview(buf[2], ins[2]);
      break;
    default: // MatmulBGrad
      g.epilogue = Epilogue::BGrad;
      g.bias = view(res[1], outs[1]);
      break;
    }
    if (gemm_->supports(g)) {
      gemm_->run(g, s);
      return;
    }
  }
  // cuBLASLt has no such epilogue for this layout, shape or dtype: the GEMM,
  // then the epilogue's kernel on its stored result.
  runMatmul(d, buf, res[0]);
  const int64_t size = outs[0].numel(), cols = lastDim(outs[0]);
  const int64_t rows = cols ? size / cols : 0;
  switch (d.kind) {
  case OpKind::MatmulBias:
    bias_add(cview(res[0], outs[0]), cview(buf[2], ins[2]), view(res[0], outs[0]), rows, cols, s);
    break;
  case OpKind::MatmulBiasGelu:
    bias_add(cview(res[0], outs[0]), cview(buf[2], ins[2]), view(res[1], outs[1]), rows, cols, s);
    gelu(cview(res[1], outs[1]), view(res[0], outs[0]), size, s);
    break;
  case OpKind::MatmulDGelu:
    gelu_grad(cview(res[0], outs[0]), cview(buf[2], ins[2]), view(res[0], outs[0]), size, s);
    break;
  default: { // MatmulBGrad: rhs summed over its contracted dims
    uint32_t mask = 0;
    for (int64_t dim : d.dims)
      mask |= 1u << dim;
    reduce_sum(cview(buf[1], ins[1]), view(res[1], outs[1]), dimsOf(ins[1].shape, d), mask, s);
    break;
  }
  }
}

bool CudaBackend::tryFuse(const DecodedCall &d, void **buf) {
  return pendingAdd_.d && tryFuseResidualNorm(d, buf);
}

bool CudaBackend::tryFuseResidualNorm(const DecodedCall &d, void **buf) {
  // add(x, r) -> h; norm(h, gamma[, beta]) -> y becomes one kernel that forms
  // h row by row, stores it (unless y overwrites it: then h is dead) and
  // normalises it: h is written once and never read back from memory.
  PendingAdd &p = pendingAdd_;
  const DecodedCall &add = *p.d;
  bool norm = d.kind == OpKind::LayerNorm || d.kind == OpKind::RmsNorm;
  if (!norm || buf[0] != p.buf[2] || d.operands[0].dtype != add.results[0].dtype)
    return false;
  auto *y = static_cast<uint8_t *>(buf[d.operands.size()]);
  const int64_t bytes = add.results[0].bytes();
  // y may be h itself or x (the kernel's first input); anything else must be
  // disjoint from x, the residual and h.
  auto disjoint = [&](const void *q) {
    auto *b = static_cast<const uint8_t *>(q);
    return y + d.results[0].bytes() <= b || b + bytes <= y;
  };
  if (!(disjoint(p.buf[1]) && (y == p.buf[2] || disjoint(p.buf[2])) &&
        ((y == p.buf[0] && d.results[0].dtype == add.operands[0].dtype) ||
         disjoint(p.buf[0]))))
    return false;
  // h must not alias the residual operand unless exactly (in place).
  auto *h = static_cast<uint8_t *>(p.buf[2]);
  for (int i = 0; i < 2; ++i) {
    auto *q = static_cast<uint8_t *>(p.buf[i]);
    if (q != h && q < h + bytes && h < q + bytes)
      return false;
  }
  TView x = cview(p.buf[0], add.operands[0]), r = cview(p.buf[1], add.operands[1]);
  TView hOut = y == h ? TView{} : view(p.buf[2], add.results[0]);
  TView out = view(y, d.results[0]);
  const int64_t rows = rowsOf(d.operands[0]), cols = lastDim(d.operands[0]);
  pendingAdd_ = PendingAdd{};
  if (d.kind == OpKind::LayerNorm)
    layernorm(x, r, cview(buf[1], d.operands[1]), cview(buf[2], d.operands[2]), out, hOut, rows,
              cols, d.epsilon, compute_);
  else
    rmsnorm(x, r, cview(buf[1], d.operands[1]), out, hOut, rows, cols, d.epsilon, compute_);
  SHARDC_CUDA_LAUNCH();
  return true;
}

void CudaBackend::flushPending() {
  if (pendingAdd_.d) {
    PendingAdd p = pendingAdd_;
    pendingAdd_ = PendingAdd{};
    launch(*p.d, p.buf);
  }
}

void CudaBackend::runAdamW(const DecodedCall &d, void **buf) {
  // Operands: lists param, grad, m, v (n each; xf.adamw: n = 1), then lr,
  // grad_scale, step[, skip]; results: lists param, m, v (in place: the
  // planner puts them over their operands), then the copies.
  const auto &in = d.operands;
  const size_t n = d.kind == OpKind::AdamW ? 1 : static_cast<size_t>(d.lists), s = 4 * n;
  void **res = buf + in.size();
  AdamWScalars sc;
  sc.lr = cview(buf[s], in[s]);
  sc.gradScale = cview(buf[s + 1], in[s + 1]);
  sc.step = cview(buf[s + 2], in[s + 2]);
  if (in.size() > s + 3)
    sc.skip = cview(buf[s + 3], in[s + 3]);
  std::vector<AdamWTensor> tensors(n);
  int64_t maxN = 0;
  size_t copy = 0;
  for (size_t k = 0; k < n; ++k) {
    // Results not over their operands: copy first, then update in place.
    for (auto [o, r] : {std::pair<size_t, size_t>{k, k}, {2 * n + k, n + k}, {3 * n + k, 2 * n + k}})
      if (res[r] != buf[o]) {
        if (d.results[r].dtype != in[o].dtype)
          failCall(d, "result #" + std::to_string(r) + " must have the dtype of operand #" +
                          std::to_string(o));
        SHARDC_CUDA(cudaMemcpyAsync(res[r], buf[o], static_cast<size_t>(in[o].bytes()),
                                    cudaMemcpyDeviceToDevice, compute_));
      }
    AdamWTensor &t = tensors[k];
    t.param = res[k];
    t.grad = buf[n + k];
    t.m = res[n + k];
    t.v = res[2 * n + k];
    t.n = in[k].numel();
    t.paramType = d.results[k].dtype;
    t.gradType = in[n + k].dtype;
    t.mType = d.results[n + k].dtype;
    t.vType = d.results[2 * n + k].dtype;
    t.decays = d.kind == OpKind::AdamW || d.decay[k] ? 1 : 0;
    t.copy = nullptr;
    t.copyType = DType::BF16;
    if (copy < d.copies.size() && d.copies[copy] == static_cast<int64_t>(k)) {
      t.copy = res[3 * n + copy];
      t.copyType = d.results[3 * n + copy].dtype;
      ++copy;
    }
    maxN = std::max(maxN, t.n);
  }
  // The descriptors go up once per call (again only if its buffers moved).
  const int key = d.index;
  uint8_t *desc = ownBuffer(adamDescriptors_, key,
                            static_cast<int64_t>(tensors.size() * sizeof(AdamWTensor)));
  std::vector<AdamWTensor> &up = adamUploaded_[key];
  bool same = up.size() == tensors.size() &&
              std::memcmp(up.data(), tensors.data(), up.size() * sizeof(AdamWTensor)) == 0;
  if (!same) {
    if (capturing_)
      throw Error("internal: AdamW descriptors changed during CUDA graph capture");
    // Stream-ordered (a pageable source is staged before the call returns).
    SHARDC_CUDA(cudaMemcpyAsync(desc, tensors.data(), tensors.size() * sizeof(AdamWTensor),
                                cudaMemcpyHostToDevice, compute_));
    up = tensors;
  }
  // One launch covers at most 65535 tensors (gridDim.y); the kernel strides.
  adamw_multi(reinterpret_cast<const AdamWTensor *>(desc), static_cast<int>(tensors.size()),
              maxN, sc, d.beta1, d.beta2, d.epsilon, d.weightDecay, compute_);
}

void CudaBackend::runMatmul(const DecodedCall &d, void **buf, void *outPtr) {
  const Equation &e = d.eq;
  const std::string &B = e.batch, &M = e.lhsFree, &N = e.rhsFree, &K = e.contracted;
  const TensorType &lt = d.operands[0], &rt_ = d.operands[1], &ot = d.results[0];
  // cuBLASLt needs A and B of one dtype: mixed operands are widened to f32.
  DType ab = lt.dtype == rt_.dtype ? lt.dtype : DType::F32;
  std::string lhsWant = d.transA ? B + K + M : B + M + K;
  std::string rhsWant = d.transB ? B + N + K : B + K + N;
  std::string natural = B + M + N;
  int64_t es = dtype_size(ab);
  // The copies for cuBLASLt, sized as the plan sized them.
  const rt::scratch::MatmulRelayout copies = rt::scratch::matmulRelayout(d);
  const int64_t lhsBytes = copies.lhs, rhsBytes = copies.rhs, outBytes = copies.out;
  uint8_t *ws = copies.total() ? scratch(d, buf, copies.total()) : nullptr;
  if ((lt.dtype != ab && e.lhs != lhsWant) || (rt_.dtype != ab && e.rhs != rhsWant))
    failCall(d, "mixes operand dtypes with a transposed operand layout, which the CUDA "
                "backend does not run");
  // The letters `have` of src laid out as `want` in dst.
  auto relayout = [&](const void *src, void *dst, int64_t elemBytes, const std::string &have,
                      const std::string &want) {
    std::vector<int64_t> shape, perm;
    for (char ch : have)
      shape.push_back(d.letter[ch - 'a']);
    for (char ch : want)
      perm.push_back(static_cast<int64_t>(have.find(ch)));
    transpose(src, dst, elemBytes, dimsOf(shape, d), dimsOf(perm, d), compute_);
  };
  // An operand cuBLASLt cannot read as it is: widened or permuted into scratch.
  auto prepare = [&](const void *src, const TensorType &t, const std::string &have,
                     const std::string &want, uint8_t *scratch) -> TView {
    if (t.dtype != ab)
      cast(cview(src, t), TView{scratch, ab}, t.numel(), compute_);
    else
      relayout(src, scratch, es, have, want);
    return TView{scratch, ab};
  };
  TView a = lhsBytes ? prepare(buf[0], lt, e.lhs, lhsWant, ws) : cview(buf[0], lt);
  TView b = rhsBytes ? prepare(buf[1], rt_, e.rhs, rhsWant, ws + lhsBytes) : cview(buf[1], rt_);
  TView c{outBytes ? ws + lhsBytes + rhsBytes : outPtr, ot.dtype};

  GemmArgs g;
  g.batch = d.batch;
  g.transA = d.transA;
  g.transB = d.transB;
  g.m = d.m;
  g.n = d.n;
  g.k = d.k;
  g.a = a;
  g.b = b;
  g.c = c;
  g.lda = d.transA ? d.m : d.k;
  g.ldb = d.transB ? d.k : d.n;
  g.ldc = d.n;
  g.strideA = d.m * d.k;
  g.strideB = d.k * d.n;
  g.strideC = d.m * d.n;
  gemm_->run(g, compute_);
  if (outBytes)
    relayout(c.p, outPtr, dtype_size(ot.dtype), natural, e.out);
}

void CudaBackend::runKernel(const DecodedCall &d, void **buf) {
  const auto &ins = d.operands;
  const auto &outs = d.results;
  void **res = buf + ins.size();
  const int64_t n0 = ins.empty() ? 0 : ins[0].numel();
  auto in = [&](size_t i) { return cview(buf[i], ins[i]); };
  auto out = [&](size_t i) { return view(res[i], outs[i]); };
  auto none = TView{nullptr, DType::F32};
  auto optIn = [&](size_t i) { return i < ins.size() ? in(i) : none; };
  KernelError *err = errors_ + d.index;
  cudaStream_t s = compute_;

  switch (d.kind) {
  case OpKind::Matmul:
    runMatmul(d, buf, res[0]);
    return;
  case OpKind::Embedding:
    embedding(in(0), static_cast<const int32_t *>(buf[1]), out(0), ins[1].numel(),
              d.block.global, d.block.offset, d.block.local, ins[0].shape[1], err, s);
    return;
  case OpKind::Iota:
    iota(static_cast<int32_t *>(res[0]), dimsOf(outs[0].shape, d), static_cast<int>(d.dim),
         d.block.offset, s);
    return;
  case OpKind::Add:
    add(in(0), in(1), out(0), n0, s);
    return;
  case OpKind::BiasAdd:
    bias_add(in(0), in(1), out(0), rowsOf(ins[0]), lastDim(ins[0]), s);
    return;
  case OpKind::Gelu:
    gelu(in(0), out(0), n0, s);
    return;
  case OpKind::Swiglu:
    swiglu(in(0), in(1), out(0), n0, s);
    return;
  case OpKind::Softmax:
    softmax(in(0), out(0), rowsOf(ins[0]), lastDim(ins[0]), s);
    return;
  case OpKind::LayerNorm:
    layernorm(in(0), none, in(1), in(2), out(0), none, rowsOf(ins[0]), lastDim(ins[0]),
              d.epsilon, s);
    return;
  case OpKind::RmsNorm:
    rmsnorm(in(0), none, in(1), out(0), none, rowsOf(ins[0]), lastDim(ins[0]), d.epsilon, s);
    return;
  case OpKind::Attention: {
    const auto &q = ins[0].shape;
    for (size_t i = 1; i < 3; ++i)
      if (ins[i].dtype != ins[0].dtype || outs[0].dtype != ins[0].dtype)
        failCall(d, "q, k, v and the result must share one dtype on the GPU");
    if (d.block.local < d.block.global) {
      attentionRowBlock(d, buf, s, false);
      return;
    }
    attention_forward(in(0), in(1), in(2), out(0), nullptr, q[0], q[1], q[2], ins[1].shape[2],
                      q[3], d.causal, d.scale, s);
    return;
  }
  case OpKind::Rope: {
    const auto &x = ins[0].shape;
    rope(in(0), out(0), x[0], x[1], x[2], x[3], d.theta, d.block.offset, d.inverse, s);
    return;
  }
  case OpKind::Dropout:
    dropout(in(0), out(0), dimsOf(outs[0].shape, d), dimsOf(d.dropOffset, d),
            dimsOf(d.dropGlobal, d), training_ ? d.rate : 0.0, scalars_,
            static_cast<uint64_t>(d.key), s);
    return;
  case OpKind::Reshape:
    if (res[0] != buf[0])
      SHARDC_CUDA(cudaMemcpyAsync(res[0], buf[0], static_cast<size_t>(ins[0].bytes()),
                                  cudaMemcpyDeviceToDevice, s));
    return;
  case OpKind::Offload:
  case OpKind::Reload:
    // Between the workspace and the pinned host arena (one address space).
    SHARDC_CUDA(cudaMemcpyAsync(res[0], buf[0], static_cast<size_t>(ins[0].bytes()),
                                cudaMemcpyDefault, s));
    return;
  case OpKind::Transpose:
    transpose(buf[0], res[0], dtype_size(ins[0].dtype), dimsOf(ins[0].shape, d),
              dimsOf(d.permutation, d), s);
    return;
  case OpKind::Cast:
    cast(in(0), out(0), n0, s);
    return;
  case OpKind::Fill:
    fill(out(0), outs[0].numel(), d.value, s);
    return;
  case OpKind::Scale:
    scale(in(0), out(0), n0, d.factor, s);
    return;
  case OpKind::ReduceSum: {
    uint32_t mask = 0;
    for (int64_t dim : d.dims)
      mask |= 1u << dim;
    reduce_sum(in(0), out(0), dimsOf(ins[0].shape, d), mask, s);
    return;
  }
  case OpKind::GeluGrad:
    gelu_grad(in(0), in(1), out(0), n0, s);
    return;
  case OpKind::SwigluGrad:
    swiglu_grad(in(0), in(1), in(2), out(0), out(1), n0, s);
    return;
  case OpKind::SoftmaxGrad:
    softmax_grad(in(0), in(1), out(0), rowsOf(ins[0]), lastDim(ins[0]), s);
    return;
  case OpKind::LayerNormGrad: {
    int64_t rows = rowsOf(ins[1]), cols = lastDim(ins[1]);
    layernorm_grad(in(0), in(1), in(2), out(0), out(1), out(2), rows, cols, d.epsilon,
                   scratch(d, buf, layernorm_grad_workspace_bytes(rows, cols)), s,
                   ins.size() == 4 ? in(3) : TView{});
    return;
  }
  case OpKind::RmsNormGrad: {
    int64_t rows = rowsOf(ins[1]), cols = lastDim(ins[1]);
    rmsnorm_grad(in(0), in(1), in(2), out(0), out(1), rows, cols, d.epsilon,
                 scratch(d, buf, rmsnorm_grad_workspace_bytes(rows, cols)), s,
                 ins.size() == 4 ? in(3) : TView{});
    return;
  }
  case OpKind::AttentionGrad: {
    const auto &q = ins[1].shape;
    int64_t Hkv = ins[2].shape[2];
    for (size_t i = 1; i < 5; ++i)
      if (ins[i].dtype != ins[1].dtype)
        failCall(d, "q, k, v, out and dout must share one dtype on the GPU");
    if (d.block.local < d.block.global) {
      attentionRowBlock(d, buf, s, true);
      return;
    }
    attention_backward(in(0), in(1), in(2), in(3), in(4), out(0), out(1), out(2), q[0], q[1],
                       q[2], Hkv, q[3], d.causal, d.scale,
                       scratch(d, buf, attention_backward_workspace_bytes(q[0], q[1], q[2], Hkv, q[3])),
                       s);
    return;
  }
  case OpKind::PackedAttention:
  case OpKind::PackedAttentionGrad:
    packedAttention(d, buf, s, d.kind == OpKind::PackedAttentionGrad);
    return;
  case OpKind::Concat:
  case OpKind::Split:
    concatOrSplit(d, buf, s);
    return;
  case OpKind::EmbeddingGrad: {
    int64_t dim = outs[0].shape[1];
    void *scratch = workspace(
        std::max<int64_t>(embedding_grad_workspace_bytes(ins[1].numel(), d.block.local), 1));
    embedding_grad(in(0), static_cast<const int32_t *>(buf[1]), out(0), ins[1].numel(),
                   d.block.global, d.block.offset, d.block.local, dim, scratch, err, s);
    return;
  }
  case OpKind::SumSquares:
  case OpKind::MultiSumSquares: {
    std::vector<TView> xs;
    std::vector<int64_t> ns;
    for (size_t i = 0; i < ins.size(); ++i) {
      xs.push_back(in(i));
      ns.push_back(ins[i].numel());
    }
    const int count = static_cast<int>(ins.size());
    sum_squares_multi(xs.data(), ns.data(), count, static_cast<float *>(res[0]),
                      scratch(d, buf, sum_squares_multi_workspace_bytes(ns.data(), count)), s);
    return;
  }
  case OpKind::AdamW:
  case OpKind::MultiAdamW:
    runAdamW(d, buf);
    return;
  case OpKind::MatmulBias:
  case OpKind::MatmulBiasGelu:
  case OpKind::MatmulDGelu:
  case OpKind::MatmulBGrad:
    runMatmulEpilogue(d, buf);
    return;
  case OpKind::ClipGradNorm:
    clip_grad_norm(in(0), optIn(1), static_cast<float *>(res[0]), static_cast<float *>(res[1]),
                   static_cast<float *>(res[2]), d.maxNorm, s);
    return;
  case OpKind::LrSchedule:
    lr_schedule(in(0), static_cast<float *>(res[0]), d.lr, d.minLr, d.warmup, d.decaySteps, s);
    return;
  case OpKind::CountStep:
    count_step(in(0), optIn(1), static_cast<int32_t *>(res[0]), s);
    return;
  case OpKind::LossScaleUpdate:
    loss_scale_update(in(0), in(1), in(2), static_cast<float *>(res[0]),
                      static_cast<int32_t *>(res[1]), d.window, d.factor, d.minScale, s);
    return;
  case OpKind::CrossEntropy:
  case OpKind::LinearCrossEntropy:
  case OpKind::CrossEntropyGrad:
  case OpKind::LinearCrossEntropyGrad:
    runCrossEntropy(d, buf);
    return;
  default:
    failCall(d, "the CUDA backend does not run this op");
  }
}

//===----------------------------------------------------------------------===//
// Cross-entropy, whole or vocabulary-parallel
//===----------------------------------------------------------------------===//

void CudaBackend::onCommStream(const std::function<void(cudaStream_t)> &exchange) {
  // Every NCCL operation goes to the communication stream, in program order:
  // communicators used concurrently from two streams can deadlock.
  cudaEvent_t ready = lossEvents_[0], done = lossEvents_[1];
  SHARDC_CUDA(cudaEventRecord(ready, compute_));
  SHARDC_CUDA(cudaStreamWaitEvent(commStream_, ready, 0));
  exchange(commStream_);
  SHARDC_CUDA(cudaEventRecord(done, commStream_));
  SHARDC_CUDA(cudaStreamWaitEvent(compute_, done, 0));
}

void CudaBackend::groupAllGatherStats(const Axes &axes, float *stats, int64_t floats,
                                      float *gathered) {
  onCommStream([&](cudaStream_t s) {
    deviceComm_->allgather(axes, stats, gathered, floats * static_cast<int64_t>(sizeof(float)), s);
  });
}

void CudaBackend::groupSumCount(const Axes &axes, int32_t *count) {
  onCommStream([&](cudaStream_t s) {
    deviceComm_->allreduce(axes, count, count, 1, DType::I32, Reduction::Sum, s);
  });
}

void CudaBackend::runCrossEntropy(const DecodedCall &d, void **buf) {
  const bool grad = d.kind == OpKind::CrossEntropyGrad || d.kind == OpKind::LinearCrossEntropyGrad;
  const bool linear =
      d.kind == OpKind::LinearCrossEntropy || d.kind == OpKind::LinearCrossEntropyGrad;
  const auto &ins = d.operands;
  void **res = buf + ins.size();
  const MeshDesc &mesh = program_.mesh;
  KernelError *err = errors_ + d.index;

  size_t i = 0;
  TView dloss{};
  if (grad)
    dloss = cview(buf[i++], ins[0]);
  const int64_t rows = rowsOf(ins[i]);
  TView x{}, w{}, logits{};
  if (linear) {
    x = cview(buf[i], ins[i]);
    ++i;
    w = cview(buf[i], ins[i]);
    ++i;
    if (x.dtype != w.dtype)
      failCall(d, "x and the weight must share one dtype on the GPU");
  } else {
    logits = cview(buf[i], ins[i]);
    ++i;
  }
  const auto *targets = static_cast<const int32_t *>(buf[i++]);
  TView mask{};
  if (ins.size() > i)
    mask = cview(buf[i], ins[i]);
  const Block &b = d.block;
  const int64_t members = mesh.size(b.axes), tokenMembers = mesh.size(d.tokenAxes);
  if ((members > 1 || tokenMembers > 1) && !deviceComm_)
    failCall(d, "a split loss needs communicators");

  // A padded vocabulary: only the block's first `cols` columns are classes;
  // the rest get no probability and a zero gradient.
  const int64_t cols = classColumns(b, d.classes);
  if (cols == 0)
    failCall(d, "this rank's vocabulary block [" + std::to_string(b.offset) + ", " +
                    std::to_string(b.offset + b.local) + ") is all padding (classes = " +
                    std::to_string(d.classes) +
                    "): the GPU needs at least one class per rank of the vocabulary split");
  // The GEMMs run over the whole (aligned) block.
  const LinearCrossEntropyShape shape =
      linear ? rt::scratch::linearCrossEntropyShape(d) : LinearCrossEntropyShape{};

  // Scratch: [stats 3*rows][gathered members*3*rows][linear CE workspace].
  const rt::scratch::LossLayout layout = rt::scratch::lossLayout(d, mesh);
  uint8_t *ws = scratch(d, buf, layout.total());
  auto *stats = reinterpret_cast<float *>(ws);
  auto *gathered = reinterpret_cast<float *>(ws + layout.stats);
  void *lceWs = ws + layout.stats + layout.gathered;

  // 1. This block's statistics; 2. combined over the vocabulary group.
  if (linear)
    linear_cross_entropy_stats(*gemm_, x, w, targets, mask, shape, stats, lceWs, err, compute_);
  else
    detail::ce_stats(logits, b.local, targets, mask, rows, d.classes, b.offset, cols,
                     d.ignoreIndex, stats, stats + rows, stats + 2 * rows, /*merge=*/false,
                     /*positionOffset=*/0, err, compute_);
  if (members > 1) {
    groupAllGatherStats(b.axes, stats, 3 * rows, gathered);
    cross_entropy_combine_stats(gathered, members, rows, stats, compute_);
  }
  // 3. The counted rows of the token group.
  cross_entropy_count(targets, mask, rows, d.ignoreIndex, groupCount_, compute_);
  if (tokenMembers > 1)
    groupSumCount(d.tokenAxes, groupCount_);
  // 4. The loss, or this block of the gradients.
  if (!grad) {
    cross_entropy_loss(stats, targets, mask, rows, d.ignoreIndex, groupCount_,
                       view(res[0], d.results[0]), compute_);
  } else if (linear) { // dW's padding comes out zero (zero dlogits there)
    linear_cross_entropy_backward(*gemm_, dloss, x, w, targets, mask, shape, stats, groupCount_,
                                  view(res[0], d.results[0]), view(res[1], d.results[1]), lceWs,
                                  compute_);
  } else {
    TView dl = view(res[0], d.results[0]);
    detail::ce_grad(dloss, logits, b.local, targets, mask, stats, stats + rows, groupCount_, dl,
                    b.local, rows, b.offset, cols, d.ignoreIndex, compute_);
    detail::zero_columns(dl, rows, b.local, cols, compute_); // the padding's gradient
  }
}

//===----------------------------------------------------------------------===//
// Collectives and copies
//===----------------------------------------------------------------------===//

int CudaBackend::collectiveStart(int call, int comm, const void *inPtr, void *outPtr,
                                 void *scratchPtr) {
  const DecodedCall &d = decoded(call, true);
  auto start = std::chrono::steady_clock::now();
  flushPending();
  if (comm < 0 || comm >= static_cast<int>(program_.comms.size()))
    failCall(d, "communicator " + std::to_string(comm) + " is outside the descriptor's " +
                    std::to_string(program_.comms.size()) + " communicators");
  const Axes &axes = program_.comms[comm].axes;
  if (d.gridAxes && *d.gridAxes != axes)
    failCall(d, "runs on mesh axes " + axesString(*d.gridAxes) + " but communicator " +
                    std::to_string(comm) + " is on " + axesString(axes));
  const int64_t n = program_.mesh.size(axes);
  if (n > 1 && !deviceComm_)
    failCall(d, "needs communicators");
  const TensorType &inT = d.operands[0], &outT = d.results[0];
  const int64_t es = dtype_size(inT.dtype), bytes = inT.bytes();
  // The staging: regions of the call's planned scratch (KernelScratch.h
  // collectiveStaging), else buffers of the backend's own per call (a
  // program without a plan for it). Checked before anything is issued.
  scratch::PlannedStaging plan;
  try {
    checkCollectiveShapes(d, n);
    plan = scratch::plannedStaging(d, n, inPtr, outPtr, scratchPtr);
  } catch (const Error &e) {
    failCall(d, e.what());
  }
  const scratch::CollectiveStaging &st = plan.layout;
  uint8_t *planned = plan.base;

  // The handle's events: "inputs ready" on compute, "done" on comm.
  size_t handle = 0;
  while (handle < inFlight_.size() && inFlight_[handle])
    ++handle;
  if (handle == inFlight_.size())
    inFlight_.push_back(false);
  inFlight_[handle] = true;
  cudaEvent_t ready = event(2 * handle), done = event(2 * handle + 1);
  cudaStream_t s = commStream_;
  SHARDC_CUDA(cudaEventRecord(ready, compute_));
  SHARDC_CUDA(cudaStreamWaitEvent(s, ready, 0));

  const auto *in = static_cast<const uint8_t *>(inPtr);
  auto *out = static_cast<uint8_t *>(outPtr);
  auto staging = [&](int64_t offset, int key, int64_t size) {
    return planned && offset >= 0 ? planned + offset
                                  : ownBuffer(collectiveBuffers_, 3 * call + key, size);
  };
  // Blocks j of `packed` go to member j: parts of `shape` along `dim`.
  auto pack = [&](const uint8_t *src, uint8_t *dst, const std::vector<int64_t> &shape,
                  int64_t dim) {
    Split3 sp(shape, dim, es);
    int64_t part = sp.dimSize / n, run = part * sp.inner;
    if (sp.outer == 1) { // the parts are contiguous already
      SHARDC_CUDA(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                  s));
      return;
    }
    for (int64_t j = 0; j < n; ++j)
      SHARDC_CUDA(cudaMemcpy2DAsync(dst + j * (bytes / n), run, src + j * run,
                                    sp.dimSize * sp.inner, run, sp.outer,
                                    cudaMemcpyDeviceToDevice, s));
  };
  // The inverse: member j's contiguous block becomes part j along `dim`.
  auto place = [&](const uint8_t *src, uint8_t *dst, const std::vector<int64_t> &shape,
                   int64_t dim, int64_t blockBytes) {
    Split3 sp(shape, dim, es);
    int64_t part = sp.dimSize / n, run = part * sp.inner;
    if (sp.outer == 1 && blockBytes == run) { // contiguous parts, back to back
      SHARDC_CUDA(cudaMemcpyAsync(dst, src, static_cast<size_t>(n * run),
                                  cudaMemcpyDeviceToDevice, s));
      return;
    }
    for (int64_t j = 0; j < n; ++j)
      SHARDC_CUDA(cudaMemcpy2DAsync(dst + j * run, sp.dimSize * sp.inner, src + j * blockBytes,
                                    run, run, sp.outer, cudaMemcpyDeviceToDevice, s));
  };
  // An input overlapping the output (other than an in-place all-reduce) is
  // read from a copy.
  if (st.inputCopy >= 0) {
    uint8_t *copyBuf = staging(st.inputCopy, 2, bytes);
    SHARDC_CUDA(cudaMemcpyAsync(copyBuf, in, static_cast<size_t>(bytes),
                                cudaMemcpyDeviceToDevice, s));
    in = copyBuf;
  }

  switch (d.kind) {
  case OpKind::AllGather: {
    std::vector<int64_t> shape = inT.shape;
    shape[d.axis] *= n;
    if (n == 1) {
      if (in != out)
        SHARDC_CUDA(cudaMemcpyAsync(out, in, static_cast<size_t>(bytes),
                                    cudaMemcpyDeviceToDevice, s));
    } else if (Split3(shape, d.axis, es).outer == 1) {
      deviceComm_->allgather(axes, in, out, bytes, s);
    } else {
      uint8_t *tmp = staging(st.blocks, 0, n * bytes);
      deviceComm_->allgather(axes, in, tmp, bytes, s);
      place(tmp, out, shape, d.axis, bytes);
    }
    break;
  }
  case OpKind::AllReduce:
    if (n == 1) {
      if (in != out)
        SHARDC_CUDA(cudaMemcpyAsync(out, in, static_cast<size_t>(bytes),
                                    cudaMemcpyDeviceToDevice, s));
    } else {
      deviceComm_->allreduce(axes, in, out, inT.numel(), inT.dtype, d.reduction, s);
    }
    break;
  case OpKind::ReduceScatter: {
    std::vector<int64_t> shape = inT.shape;
    shape[d.axis] /= n;
    const uint8_t *src = in;
    if (Split3(inT.shape, d.axis, es).outer != 1) {
      uint8_t *tmp = staging(st.blocks, 0, bytes);
      pack(in, tmp, inT.shape, d.axis);
      src = tmp;
    }
    if (n == 1)
      SHARDC_CUDA(cudaMemcpyAsync(out, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                  s));
    else
      deviceComm_->reduceScatter(axes, src, out, outT.numel(), inT.dtype, d.reduction, s);
    break;
  }
  case OpKind::AllSlice: {
    std::vector<int64_t> shape = inT.shape;
    shape[d.axis] /= n;
    int64_t index = program_.mesh.shardIndex(axes, program_.mesh.coords(rank_));
    Split3 sp(inT.shape, d.axis, es);
    int64_t part = sp.dimSize / n, run = part * sp.inner;
    if (sp.outer == 1)
      SHARDC_CUDA(cudaMemcpyAsync(out, in + index * run, static_cast<size_t>(run),
                                  cudaMemcpyDeviceToDevice, s));
    else
      SHARDC_CUDA(cudaMemcpy2DAsync(out, run, in + index * run, sp.dimSize * sp.inner, run,
                                    sp.outer, cudaMemcpyDeviceToDevice, s));
    break;
  }
  case OpKind::Transfer: {
    int64_t me = program_.mesh.shardIndex(axes, program_.mesh.coords(rank_));
    int64_t to = me == d.axis ? d.axis2 : -1, from = me == d.axis2 ? d.axis : -1;
    if (to >= 0 || from >= 0)
      deviceComm_->sendrecv(axes, in, to, out, from, bytes, s);
    break;
  }
  default: { // AllToAll
    std::vector<int64_t> piece = inT.shape;
    piece[d.axis] /= n;
    std::vector<int64_t> shape = piece;
    shape[d.axis2] *= n;
    uint8_t *packed = staging(st.blocks, 0, bytes);
    uint8_t *recv = staging(st.received, 1, bytes);
    pack(in, packed, inT.shape, d.axis);
    if (n > 1)
      deviceComm_->alltoall(axes, packed, recv, bytes / n, s);
    else
      SHARDC_CUDA(cudaMemcpyAsync(recv, packed, static_cast<size_t>(bytes),
                                  cudaMemcpyDeviceToDevice, s));
    place(recv, out, shape, d.axis2, bytes / n);
    break;
  }
  }
  SHARDC_CUDA(cudaEventRecord(done, s));
  if (timing_)
    time(collectiveSeconds_, d.op, start);
  return static_cast<int>(handle);
}

void CudaBackend::collectiveWait(int handle) {
  if (handle < 0 || handle >= static_cast<int>(inFlight_.size()) || !inFlight_[handle])
    throw Error("wait on collective handle " + std::to_string(handle) +
                ", which is not in flight");
  flushPending();
  SHARDC_CUDA(cudaStreamWaitEvent(compute_, event(2 * handle + 1), 0));
  inFlight_[handle] = false;
}

void CudaBackend::copy(void *dst, const void *src, int64_t bytes) {
  flushPending();
  if (dst == src || bytes == 0)
    return;
  auto *d = static_cast<uint8_t *>(dst);
  const auto *s = static_cast<const uint8_t *>(src);
  if (d < s + bytes && s < d + bytes) {
    // Overlapping (a state result planned over its own argument): through
    // the workspace, as memmove.
    uint8_t *tmp = workspace(bytes);
    SHARDC_CUDA(cudaMemcpyAsync(tmp, s, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                                compute_));
    s = tmp;
  }
  SHARDC_CUDA(
      cudaMemcpyAsync(d, s, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, compute_));
}

int CudaBackend::copyStart(void *dst, const void *src, int64_t bytes) {
  flushPending();
  auto start = std::chrono::steady_clock::now();
  size_t handle = 0;
  while (handle < copyInFlight_.size() && copyInFlight_[handle])
    ++handle;
  if (handle == copyInFlight_.size()) {
    copyInFlight_.push_back(false);
    for (int k = 0; k < 2; ++k) {
      cudaEvent_t ev;
      SHARDC_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
      copyEvents_.push_back(ev);
    }
  }
  copyInFlight_[handle] = true;
  cudaEvent_t ready = copyEvents_[2 * handle], done = copyEvents_[2 * handle + 1];
  // Ordered after everything issued on the compute stream; the compute
  // stream goes on while the copy engine moves the bytes.
  SHARDC_CUDA(cudaEventRecord(ready, compute_));
  SHARDC_CUDA(cudaStreamWaitEvent(copyStream_, ready, 0));
  SHARDC_CUDA(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault,
                              copyStream_));
  SHARDC_CUDA(cudaEventRecord(done, copyStream_));
  if (timing_) {
    SHARDC_CUDA(cudaStreamSynchronize(copyStream_));
    time(kernelSeconds_, "offload copy", start);
  }
  return static_cast<int>(handle);
}

void CudaBackend::copyWait(int handle) {
  if (handle < 0 || handle >= static_cast<int>(copyInFlight_.size()) || !copyInFlight_[handle])
    throw Error("wait on copy handle " + std::to_string(handle) + ", which is not in flight");
  flushPending();
  SHARDC_CUDA(cudaStreamWaitEvent(compute_, copyEvents_[2 * handle + 1], 0));
  copyInFlight_[handle] = false;
}

} // namespace

} // namespace shardc::cuda

namespace shardc::rt {

std::unique_ptr<Backend> makeCudaBackend(const Program &program, Communicators *comm,
                                         const CudaOptions &options) {
  return std::make_unique<cuda::CudaBackend>(program, comm, options);
}

} // namespace shardc::rt
