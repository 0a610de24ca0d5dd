//===- Checkpoint.cpp - sharded training checkpoints ----------------------===//

#include "runtime/checkpoint/Checkpoint.h"

#include "runtime/checkpoint/Safetensors.h"
#include "runtime/abi/StateNames.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

using nlohmann::json;
namespace fs = std::filesystem;

namespace shardc::ckpt {

namespace {

constexpr const char *kFormat = "shardc-checkpoint";
constexpr const char *kManifest = "manifest.json";
constexpr const char *kLatest = "latest";
constexpr const char *kTmpSuffix = ".tmp";

std::string join(const std::string &dir, const std::string &name) {
  return (fs::path(dir) / name).string();
}

/// Writes `text` to path via a synced temporary and a rename.
void writeFileAtomic(const std::string &path, const std::string &text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw rt::Error("cannot create '" + tmp + "': " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw rt::Error("cannot write '" + tmp + "': " + why);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw rt::Error("cannot write '" + tmp + "': " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw rt::Error("cannot rename '" + tmp + "' to '" + path + "': " + why);
  }
}

/// The step of a directory name "step-NNNNNN", or -1.
int64_t parseStepDirName(const std::string &name) {
  if (name.size() <= 5 || name.compare(0, 5, "step-") != 0)
    return -1;
  int64_t v = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10)
      return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

bool isComplete(const fs::path &stepDir) {
  std::error_code ec;
  return fs::is_regular_file(stepDir / kManifest, ec);
}

std::string axesWords(const rt::Axes &axes) {
  std::string s = "[";
  for (size_t i = 0; i < axes.size(); ++i)
    s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + "]";
}

/// Checks a tensor's sharding against a mesh; `where` names the tensor.
void checkSharding(const TensorMeta &t, const rt::MeshDesc &mesh, const std::string &where) {
  if (t.sharding.size() != t.globalShape.size())
    throw rt::Error(where + ": sharding and global_shape differ in rank");
  std::vector<bool> used(mesh.sizes.size());
  for (size_t d = 0; d < t.sharding.size(); ++d) {
    for (int a : t.sharding[d]) {
      if (a < 0 || a >= static_cast<int>(mesh.sizes.size()))
        throw rt::Error(where + ": dim " + std::to_string(d) + " is split over mesh axis " +
                        std::to_string(a) + ", outside mesh " + mesh.str());
      if (used[a])
        throw rt::Error(where + ": mesh axis " + std::to_string(a) +
                        " splits it more than once");
      used[a] = true;
    }
    if (t.globalShape[d] < 0 || t.globalShape[d] % mesh.size(t.sharding[d]) != 0)
      throw rt::Error(where + ": dim " + std::to_string(d) + " of size " +
                      std::to_string(t.globalShape[d]) + " does not split over axes " +
                      axesWords(t.sharding[d]) + " of mesh " + mesh.str());
  }
}

/// Whether the boxes [ao, ao+as) and [bo, bo+bs) overlap.
bool intersects(const std::vector<int64_t> &ao, const std::vector<int64_t> &as,
                const std::vector<int64_t> &bo, const std::vector<int64_t> &bs) {
  for (size_t d = 0; d < ao.size(); ++d)
    if (std::max(ao[d], bo[d]) >= std::min(ao[d] + as[d], bo[d] + bs[d]))
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Reading manifest fields
//===----------------------------------------------------------------------===//
//
// nlohmann's get<> converts whatever it finds (1e18 or 2.5 to an integer, a
// huge unsigned to a negative), so integers are taken only from JSON
// integers and range-checked here. Every error names the manifest and the
// field, as a path into the JSON: "mesh.sizes[1]", "tensors[2].dtype".

/// The precisions a program can have (`shardc compile --precision`).
constexpr const char *kPrecisions[] = {"fp32", "bf16", "fp16"};

[[noreturn]] void badField(const std::string &path, const std::string &field,
                           const std::string &what) {
  throw rt::Error(path + ": \"" + field + "\" " + what);
}

/// The member `key` of `object`, which must be a JSON object holding it;
/// `field` is its path.
const json &member(const std::string &path, const json &object, const char *key,
                   const std::string &field) {
  auto it = object.find(key);
  if (it == object.end())
    throw rt::Error(path + ": no \"" + field + "\"");
  return *it;
}

std::string stringField(const std::string &path, const json &value, const std::string &field) {
  if (!value.is_string())
    badField(path, field, "is " + value.dump() + ", not a string");
  return value.get<std::string>();
}

const json &arrayField(const std::string &path, const json &value, const std::string &field) {
  if (!value.is_array())
    badField(path, field, "is " + value.dump() + ", not an array");
  return value;
}

const json &objectField(const std::string &path, const json &value, const std::string &field) {
  if (!value.is_object())
    badField(path, field, "is " + value.dump() + ", not an object");
  return value;
}

/// A JSON integer in [lo, hi]; 3.0, 1e18, "3" and out-of-range values are
/// errors, never converted.
int64_t integerField(const std::string &path, const json &value, const std::string &field,
                     int64_t lo, int64_t hi) {
  if (!value.is_number_integer())
    badField(path, field, "is " + value.dump() + ", not an integer");
  bool fits = !value.is_number_unsigned() || value.get<uint64_t>() <= uint64_t(INT64_MAX);
  int64_t v = fits ? value.get<int64_t>() : 0;
  if (!fits || v < lo || v > hi)
    badField(path, field,
             "is " + value.dump() + ", outside [" + std::to_string(lo) + ", " +
                 std::to_string(hi) + "]");
  return v;
}

/// A JSON integer in [0, 2^64 - 1].
uint64_t unsignedField(const std::string &path, const json &value, const std::string &field) {
  if (!value.is_number_integer())
    badField(path, field, "is " + value.dump() + ", not an integer");
  if (!value.is_number_unsigned())
    badField(path, field, "is " + value.dump() + ", negative");
  return value.get<uint64_t>();
}

std::string indexed(const std::string &field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
}

/// One entry of "tensors"; `field` is its path ("tensors[2]").
TensorMeta readTensorMeta(const std::string &path, const json &entry, const std::string &field) {
  objectField(path, entry, field);
  TensorMeta t;
  t.name = stringField(path, member(path, entry, "name", field + ".name"), field + ".name");
  std::string dtype =
      stringField(path, member(path, entry, "dtype", field + ".dtype"), field + ".dtype");
  try {
    t.dtype = rt::dtype_from_name(dtype);
  } catch (const rt::Error &) {
    badField(path, field + ".dtype", "is \"" + dtype + "\", not a dtype of the runtime");
  }

  std::string shapeField = field + ".global_shape";
  const json &shape = arrayField(path, member(path, entry, "global_shape", shapeField), shapeField);
  int64_t bytes = rt::dtype_size(t.dtype); // of the whole tensor, overflow-checked
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t extent = integerField(path, shape[d], indexed(shapeField, d), 0, INT64_MAX);
    t.globalShape.push_back(extent);
    if (extent != 0 && bytes > INT64_MAX / extent)
      badField(path, shapeField, shape.dump() + " holds more than 2^63 bytes");
    bytes *= extent;
  }

  std::string shardingField = field + ".sharding";
  const json &sharding =
      arrayField(path, member(path, entry, "sharding", shardingField), shardingField);
  for (size_t d = 0; d < sharding.size(); ++d) {
    const json &axes = arrayField(path, sharding[d], indexed(shardingField, d));
    rt::Axes dimAxes;
    for (size_t i = 0; i < axes.size(); ++i)
      dimAxes.push_back(static_cast<int>(
          integerField(path, axes[i], indexed(indexed(shardingField, d), i), 0, INT_MAX)));
    t.sharding.push_back(std::move(dimAxes));
  }
  if (entry.contains("stage")) {
    t.stage = static_cast<int>(integerField(path, entry.at("stage"), field + ".stage", 0, INT_MAX));
    t.stageAxis = static_cast<int>(
        integerField(path, member(path, entry, "stage_axis", field + ".stage_axis"),
                     field + ".stage_axis", 0, INT_MAX));
  }
  return t;
}

/// Validates a rank file against the manifest: exactly its tensors, with
/// their local shapes and dtypes.
void checkRankFile(const std::string &path, const std::map<std::string, TensorData> &file,
                   const Manifest &manifest, int64_t rank) {
  for (const TensorMeta &t : manifest.tensors) {
    if (!t.heldBy(manifest.mesh, rank)) {
      if (file.count(t.name))
        throw rt::Error(path + ": tensor '" + t.name + "' belongs to pipeline stage " +
                        std::to_string(t.stage) + ", which this rank is not on");
      continue;
    }
    auto it = file.find(t.name);
    if (it == file.end())
      throw rt::Error(path + ": no tensor '" + t.name + "' (the manifest lists it)");
    std::vector<int64_t> local = t.localShape(manifest.mesh);
    if (it->second.shape != local)
      throw rt::Error(path + ": tensor '" + t.name + "' has shape " +
                      rt::shape_str(it->second.shape) + " but the manifest implies " +
                      rt::shape_str(local));
    if (it->second.dtype != rt::dtype_name(t.dtype))
      throw rt::Error(path + ": tensor '" + t.name + "' is " + it->second.dtype +
                      " but the manifest says " + rt::dtype_name(t.dtype));
  }
  for (const auto &[name, data] : file)
    if (!manifest.find(name))
      throw rt::Error(path + ": tensor '" + name + "' is not in the manifest");
}

} // namespace

//===----------------------------------------------------------------------===//
// TensorMeta, Manifest
//===----------------------------------------------------------------------===//

std::vector<int64_t> TensorMeta::localShape(const rt::MeshDesc &mesh) const {
  return mesh.localShape(globalShape, sharding);
}

std::vector<int64_t> TensorMeta::blockOffsets(const rt::MeshDesc &mesh, int64_t rank) const {
  return mesh.blockOffsets(globalShape, sharding, rank);
}

std::vector<TensorMeta> stateTensors(const rt::Program &program) {
  std::vector<TensorMeta> out;
  for (const rt::BoundaryTensor &b : program.tensors)
    if (b.kind == "state")
      out.push_back(TensorMeta{b.name, b.local.dtype, b.globalShape, b.sharding, b.stage,
                               b.stage >= 0 ? program.pipeline.axis : -1});
  return out;
}

const TensorMeta *Manifest::find(const std::string &name) const {
  for (const TensorMeta &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

std::string stepDirName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%06lld", static_cast<long long>(step));
  return buf;
}

std::string rankFileName(int64_t rank) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "rank-%05lld.safetensors", static_cast<long long>(rank));
  return buf;
}

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

void beginCheckpoint(const std::string &dir, int64_t step) {
  fs::path final = fs::path(dir) / stepDirName(step);
  fs::path tmp = fs::path(dir) / (stepDirName(step) + kTmpSuffix);
  std::error_code ec;
  if (fs::exists(final, ec))
    throw rt::Error("'" + final.string() + "' already exists; a checkpoint is never " +
                    "overwritten (use another --checkpoint-dir or --resume)");
  fs::remove_all(tmp, ec); // a crash's leftovers: ranks of another mesh, partial files
  if (ec)
    throw rt::Error("cannot remove the stale '" + tmp.string() + "': " + ec.message());
  fs::create_directories(tmp, ec);
  if (ec)
    throw rt::Error("cannot create '" + tmp.string() + "': " + ec.message());
}

void writeRankBlocks(const std::string &dir, const Manifest &manifest, int64_t rank,
                     const std::vector<BlockView> &blocks) {
  std::string tmp = join(dir, stepDirName(manifest.step) + kTmpSuffix);
  std::string path = join(tmp, rankFileName(rank));
  std::map<std::string, TensorData> out;
  for (const TensorMeta &t : manifest.tensors) {
    if (!t.heldBy(manifest.mesh, rank))
      continue; // another pipeline stage's
    auto it = std::find_if(blocks.begin(), blocks.end(),
                           [&](const BlockView &b) { return b.name == t.name; });
    if (it == blocks.end() || !it->data)
      throw rt::Error("cannot write '" + path + "': rank " + std::to_string(rank) +
                      " has no block of '" + t.name + "'");
    TensorData d{rt::dtype_name(t.dtype), t.localShape(manifest.mesh), {}};
    const auto *p = static_cast<const uint8_t *>(it->data);
    d.bytes.assign(p, p + rt::num_elements(d.shape) * rt::dtype_size(t.dtype));
    out.emplace(t.name, std::move(d));
  }
  write_safetensors(path, out, {{"step", std::to_string(manifest.step)},
                                {"rank", std::to_string(rank)},
                                {"mesh", manifest.mesh.str()}});
}

std::string commitCheckpoint(const std::string &dir, const Manifest &manifest) {
  std::string name = stepDirName(manifest.step);
  fs::path tmp = fs::path(dir) / (name + kTmpSuffix);
  fs::path final = fs::path(dir) / name;
  std::error_code ec;
  for (int64_t r = 0; r < manifest.mesh.numRanks(); ++r)
    if (!fs::is_regular_file(tmp / rankFileName(r), ec))
      throw rt::Error("cannot complete checkpoint '" + final.string() + "': '" +
                      (tmp / rankFileName(r)).string() + "' was not written");

  json j = {{"format", kFormat},
            {"version", kManifestVersion},
            {"source", manifest.source},
            {"strategy", manifest.strategy},
            {"precision", manifest.precision},
            {"mesh", {{"names", manifest.mesh.names}, {"sizes", manifest.mesh.sizes}}},
            {"ranks", manifest.mesh.numRanks()},
            {"step", manifest.step},
            {"next_position", manifest.nextPosition},
            {"seed", manifest.seed},
            {"loss_scale", manifest.lossScale ? json(*manifest.lossScale) : json(nullptr)}};
  if (!manifest.model.empty())
    j["model"] = manifest.model;
  j["tensors"] = json::array();
  for (const TensorMeta &t : manifest.tensors) {
    json e = {{"name", t.name},
              {"dtype", rt::dtype_name(t.dtype)},
              {"global_shape", t.globalShape},
              {"sharding", t.sharding}};
    if (t.stage >= 0 && t.stageAxis >= 0) {
      e["stage"] = t.stage;
      e["stage_axis"] = t.stageAxis;
    }
    j["tensors"].push_back(std::move(e));
  }
  writeFileAtomic((tmp / kManifest).string(), j.dump(2) + "\n");
  if (std::rename(tmp.c_str(), final.c_str()) != 0)
    throw rt::Error("cannot rename '" + tmp.string() + "' to '" + final.string() +
                    "': " + std::strerror(errno));
  writeFileAtomic(join(dir, kLatest), name + "\n");
  return final.string();
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

std::string latestCheckpoint(const std::string &dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw rt::Error("checkpoint directory '" + dir + "' does not exist");
  int64_t best = -1;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    int64_t step = parseStepDirName(e.path().filename().string());
    if (step > best && e.is_directory() && isComplete(e.path()))
      best = step;
  }
  if (best < 0)
    throw rt::Error("'" + dir + "' holds no complete checkpoint (a step-NNNNNN directory " +
                    "with a manifest.json)");
  // `latest` lags the newest directory only if a save died between the two
  // renames; one naming a step that is not there is corruption.
  std::string latestPath = join(dir, kLatest);
  std::ifstream in(latestPath);
  std::string named;
  if (in && std::getline(in, named) && !named.empty()) {
    int64_t step = parseStepDirName(named);
    if (step < 0 || !isComplete(fs::path(dir) / named))
      throw rt::Error(latestPath + ": names '" + named + "', which is not a complete checkpoint");
  }
  return join(dir, stepDirName(best));
}

Manifest readManifest(const std::string &stepDir) {
  std::string path = join(stepDir, kManifest);
  std::ifstream in(path);
  if (!in)
    throw rt::Error("cannot read '" + path + "' (not a checkpoint step directory?)");
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::exception &e) {
    throw rt::Error(path + ": malformed manifest (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormat)
    throw rt::Error(path + ": not a shardc checkpoint manifest (\"format\" is not \"" +
                    kFormat + "\")");

  Manifest m;
  m.version = static_cast<int>(integerField(path, member(path, j, "version", "version"),
                                            "version", 0, INT_MAX));
  if (m.version != 1 && m.version != kManifestVersion)
    throw rt::Error(path + ": manifest version " + std::to_string(m.version) +
                    " (this runtime reads versions 1 and " + std::to_string(kManifestVersion) +
                    ")");
  m.source = stringField(path, member(path, j, "source", "source"), "source");
  m.strategy = stringField(path, member(path, j, "strategy", "strategy"), "strategy");
  m.precision = stringField(path, member(path, j, "precision", "precision"), "precision");
  if (std::none_of(std::begin(kPrecisions), std::end(kPrecisions),
                   [&](const char *p) { return m.precision == p; }))
    badField(path, "precision", "is \"" + m.precision + "\", not fp32, bf16 or fp16");

  const json &mesh = objectField(path, member(path, j, "mesh", "mesh"), "mesh");
  const json &names = arrayField(path, member(path, mesh, "names", "mesh.names"), "mesh.names");
  const json &sizes = arrayField(path, member(path, mesh, "sizes", "mesh.sizes"), "mesh.sizes");
  if (names.size() != sizes.size())
    throw rt::Error(path + ": \"mesh.names\" and \"mesh.sizes\" differ in length");
  int64_t meshRanks = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    m.mesh.names.push_back(stringField(path, names[i], indexed("mesh.names", i)));
    int64_t size = integerField(path, sizes[i], indexed("mesh.sizes", i), 1, kMaxRanks);
    m.mesh.sizes.push_back(size);
    // Both factors are at most kMaxRanks = 2^24: the product cannot overflow.
    meshRanks *= size;
    if (meshRanks > kMaxRanks)
      badField(path, "mesh.sizes",
               sizes.dump() + " make more than " + std::to_string(kMaxRanks) + " ranks");
  }
  int64_t ranks = integerField(path, member(path, j, "ranks", "ranks"), "ranks", 1, kMaxRanks);
  if (ranks != meshRanks)
    badField(path, "ranks",
             "is " + std::to_string(ranks) + " but mesh " + m.mesh.str() + " has " +
                 std::to_string(meshRanks));

  m.step = integerField(path, member(path, j, "step", "step"), "step", 0, kMaxManifestCount);
  m.nextPosition = integerField(path, member(path, j, "next_position", "next_position"),
                                "next_position", 0, kMaxManifestCount);
  m.seed = unsignedField(path, member(path, j, "seed", "seed"), "seed");
  const json &lossScale = member(path, j, "loss_scale", "loss_scale");
  if (!lossScale.is_null() && !lossScale.is_number())
    badField(path, "loss_scale", "is " + lossScale.dump() + ", not a number or null");
  if (lossScale.is_number())
    m.lossScale = lossScale.get<double>();
  if (j.contains("model")) { // optional (older manifests have none)
    if (!j["model"].is_object())
      badField(path, "model", "is " + j["model"].dump() + ", not an object");
    m.model = j["model"];
  }

  const json &tensors = arrayField(path, member(path, j, "tensors", "tensors"), "tensors");
  for (size_t i = 0; i < tensors.size(); ++i)
    m.tensors.push_back(readTensorMeta(path, tensors[i], indexed("tensors", i)));
  for (const TensorMeta &t : m.tensors) {
    checkSharding(t, m.mesh, path + ": tensor '" + t.name + "'");
    if (std::count_if(m.tensors.begin(), m.tensors.end(),
                      [&](const TensorMeta &u) { return u.name == t.name; }) != 1)
      throw rt::Error(path + ": tensor '" + t.name + "' is listed twice");
  }
  return m;
}

void checkCompatible(const std::string &stepDir, const Manifest &manifest,
                     const rt::Program &program) {
  std::string path = join(stepDir, kManifest);
  if (manifest.source != program.source)
    throw rt::Error(path + ": the checkpoint is of '" + manifest.source +
                    "' but this program was compiled from '" + program.source + "'");
  // Same state tensors are not enough: fp32 and bf16 steps can keep the same
  // (fp32) state, but resuming on another precision would silently change
  // the run's numerics.
  if (manifest.precision != program.precision)
    throw rt::Error(path + ": \"precision\" is " + manifest.precision +
                    " but this program was compiled with --precision " + program.precision +
                    " (resume with a step compiled with --precision " + manifest.precision +
                    ")");
  std::vector<TensorMeta> state = stateTensors(program);
  for (const TensorMeta &t : state) {
    const TensorMeta *saved = manifest.find(t.name);
    // A bf16/f16 weight copy is its master rounded: a checkpoint of a step
    // that keeps none (ZeRO-1/2 make it from the master's shard) resumes on
    // one that does, the copy made from the saved master (loadState).
    std::string_view master = abi::lowPrecisionCopyOf(t.name);
    if (!saved && !master.empty() && manifest.find("param:" + std::string(master)))
      continue;
    if (!saved)
      throw rt::Error(path + ": no state tensor '" + t.name + "' (the program has it; a " +
                      "different model or precision?)");
    if (saved->globalShape != t.globalShape)
      throw rt::Error(path + ": state tensor '" + t.name + "' has shape " +
                      rt::shape_str(saved->globalShape) + " but the program's is " +
                      rt::shape_str(t.globalShape));
    if (saved->dtype != t.dtype)
      throw rt::Error(path + ": state tensor '" + t.name + "' is " +
                      rt::dtype_name(saved->dtype) + " but the program's is " +
                      rt::dtype_name(t.dtype));
  }
  for (const TensorMeta &t : manifest.tensors)
    if (abi::lowPrecisionCopyOf(t.name).empty() &&
        std::none_of(state.begin(), state.end(),
                     [&](const TensorMeta &u) { return u.name == t.name; }))
      throw rt::Error(path + ": state tensor '" + t.name + "' is not in the program (a " +
                      "different model or precision?)");
}

void loadBlocks(const std::string &stepDir, const Manifest &manifest,
                const std::vector<BlockTarget> &targets, int64_t preferredRank) {
  const int64_t ranks = manifest.mesh.numRanks();
  std::error_code ec;
  for (int64_t r = 0; r < ranks; ++r) {
    std::string path = join(stepDir, rankFileName(r));
    if (!fs::is_regular_file(path, ec))
      throw rt::Error(path + ": missing (the checkpoint's mesh " + manifest.mesh.str() +
                      " has " + std::to_string(ranks) + " ranks)");
  }

  // Per saved rank, the (target, tensor) pairs it supplies; replicas of one
  // saved block are read once, from preferredRank if it holds one.
  std::map<int64_t, std::vector<size_t>> needs;
  for (size_t i = 0; i < targets.size(); ++i) {
    const BlockTarget &target = targets[i];
    const TensorMeta *t = manifest.find(target.name);
    if (!t)
      throw rt::Error(join(stepDir, kManifest) + ": no state tensor '" + target.name + "'");
    bool inside = target.offsets.size() == t->globalShape.size() &&
                  target.shape.size() == t->globalShape.size();
    for (size_t d = 0; inside && d < target.shape.size(); ++d)
      inside = target.offsets[d] >= 0 && target.shape[d] >= 0 &&
               target.offsets[d] + target.shape[d] <= t->globalShape[d];
    if (!inside)
      throw rt::Error("cannot load '" + target.name + "' from '" + stepDir + "': block " +
                      rt::shape_str(target.shape) + " at " + rt::shape_str(target.offsets) +
                      " lies outside its global shape " + rt::shape_str(t->globalShape));
    std::vector<int64_t> local = t->localShape(manifest.mesh);
    std::map<std::vector<int64_t>, int64_t> owner; // saved block offsets -> rank read
    for (int64_t r = 0; r < ranks; ++r) {
      if (!t->heldBy(manifest.mesh, r))
        continue;
      std::vector<int64_t> off = t->blockOffsets(manifest.mesh, r);
      if (!intersects(off, local, target.offsets, target.shape))
        continue;
      auto [it, fresh] = owner.emplace(off, r);
      if (!fresh && r == preferredRank)
        it->second = r;
    }
    for (const auto &[off, r] : owner)
      needs[r].push_back(i);
  }

  for (const auto &[r, list] : needs) {
    std::string path = join(stepDir, rankFileName(r));
    std::map<std::string, TensorData> file = read_safetensors(
        path, nullptr, manifest.version >= 2 ? Checksums::Require : Checksums::VerifyPresent);
    checkRankFile(path, file, manifest, r);
    for (size_t i : list) {
      const BlockTarget &target = targets[i];
      const TensorMeta *t = manifest.find(target.name);
      copyIntersection(file.at(t->name).bytes.data(), t->blockOffsets(manifest.mesh, r),
                       t->localShape(manifest.mesh), target.data, target.offsets, target.shape,
                       rt::dtype_size(t->dtype));
    }
  }
}

//===----------------------------------------------------------------------===//
// Export
//===----------------------------------------------------------------------===//

namespace {

/// Concatenates 2-d row-major [rows, c_i] tensors along dim 1 (or 1-d along
/// dim 0); empty if the shapes or dtypes do not fit together.
std::optional<TensorData> concatLastDim(const std::vector<const TensorData *> &parts) {
  const TensorData &first = *parts.front();
  size_t rank = first.shape.size();
  if (rank != 1 && rank != 2)
    return std::nullopt;
  int64_t rows = rank == 2 ? first.shape[0] : 1, cols = 0;
  for (const TensorData *p : parts) {
    if (p->dtype != first.dtype || p->shape.size() != rank || (rank == 2 && p->shape[0] != rows))
      return std::nullopt;
    cols += p->shape.back();
  }
  size_t es = safetensors_dtype_size(first.dtype);
  TensorData out{first.dtype, rank == 2 ? std::vector<int64_t>{rows, cols}
                                        : std::vector<int64_t>{cols},
                 {}};
  out.bytes.resize(static_cast<size_t>(rows * cols) * es);
  uint8_t *dst = out.bytes.data();
  for (int64_t row = 0; row < rows; ++row)
    for (const TensorData *p : parts) {
      size_t n = static_cast<size_t>(p->shape.back()) * es;
      std::memcpy(dst, p->bytes.data() + row * n, n);
      dst += n;
    }
  return out;
}

} // namespace

namespace {

/// Hugging Face's GPT2Config for exported GPT-2 parameters (what
/// GPT2LMHeadModel.from_pretrained reads beside model.safetensors): sizes from
/// the tensors, heads from the model; GELU is the tanh form ("gelu_new"),
/// the LM head tied to wte, dropout off, layer-norm epsilon 1e-5.
void writeGpt2Config(const json &model, const std::map<std::string, TensorData> &params,
                     const std::string &path) {
  auto shapeOf = [&](const std::string &name) -> const std::vector<int64_t> & {
    auto it = params.find(name);
    if (it == params.end())
      throw rt::Error("cannot write " + path + ": the export has no '" + name + "'");
    return it->second.shape;
  };
  const std::vector<int64_t> &wte = shapeOf("transformer.wte.weight");
  const std::vector<int64_t> &wpe = shapeOf("transformer.wpe.weight");
  const std::vector<int64_t> &fc = shapeOf("transformer.h.0.mlp.c_fc.weight");
  int64_t layers = model.value("layers", int64_t{0}), heads = model.value("heads", int64_t{0});
  if (layers <= 0 || heads <= 0 || wte.size() != 2 || wpe.size() != 2 || fc.size() != 2)
    throw rt::Error("cannot write " + path + ": the model's layers/heads or the tensors' "
                    "shapes are missing");
  json config = {{"architectures", {"GPT2LMHeadModel"}},
                 {"model_type", "gpt2"},
                 {"vocab_size", wte[0]},
                 {"n_positions", wpe[0]},
                 {"n_ctx", wpe[0]},
                 {"n_embd", wte[1]},
                 {"n_layer", layers},
                 {"n_head", heads},
                 {"n_inner", fc[1]},
                 {"activation_function", "gelu_new"},
                 {"layer_norm_epsilon", 1e-5},
                 {"resid_pdrop", 0.0},
                 {"embd_pdrop", 0.0},
                 {"attn_pdrop", 0.0},
                 {"tie_word_embeddings", true},
                 {"bos_token_id", 50256},
                 {"eos_token_id", 50256},
                 {"torch_dtype", "float32"}};
  std::ofstream out(path);
  out << config.dump(2) << "\n";
  if (!out)
    throw rt::Error("cannot write " + path);
}

/// The tables of a causal LM with one row per vocabulary entry (token
/// embeddings, LM heads), by the names the GPT-2 and LLaMA models use.
bool isVocabularyTable(const std::string &name) {
  for (const char *t : {"transformer.wte.weight", "model.embed_tokens.weight", "lm_head.weight"})
    if (name == t)
      return true;
  return false;
}

/// A causal LM whose loss states its classes (the descriptor's model
/// "classes", from the loss's `classes`) is exported with the true rows: the
/// padding rows are no classes (the loss never gives them probability, no
/// token id reads them), and Hugging Face's models take vocab_size from the
/// table. A step whose loss had no `classes` trained its padding in the
/// softmax and keeps it. (BERT keeps it too: its default [MASK] id is the
/// last padding row.)
void dropVocabularyPadding(const json &model, std::map<std::string, TensorData> &params) {
  int64_t vocab = model.value("classes", int64_t{0});
  std::string family = model.value("family", "");
  if (vocab <= 0 || (family != "gpt2" && family != "llama"))
    return;
  for (auto &[name, t] : params) {
    if (!isVocabularyTable(name) || t.shape.empty() || t.shape[0] <= vocab)
      continue;
    size_t rowBytes = t.bytes.size() / static_cast<size_t>(t.shape[0]);
    t.bytes.resize(rowBytes * static_cast<size_t>(vocab));
    t.shape[0] = vocab;
  }
}

/// Hugging Face's LlamaConfig for exported LLaMA parameters (shardc's LLaMA
/// carries HF's names and nn.Linear layout, so the tensors load as they are):
/// sizes from the tensors, heads, positions, epsilon and RoPE theta from the
/// model; SiLU MLP, untied lm_head.
void writeLlamaConfig(const json &model, const std::map<std::string, TensorData> &params,
                      const std::string &path) {
  auto shapeOf = [&](const std::string &name) -> const std::vector<int64_t> & {
    auto it = params.find(name);
    if (it == params.end() || it->second.shape.size() != 2)
      throw rt::Error("cannot write " + path + ": the export has no 2-d '" + name + "'");
    return it->second.shape;
  };
  const std::vector<int64_t> &embed = shapeOf("model.embed_tokens.weight");
  const std::vector<int64_t> &gate = shapeOf("model.layers.0.mlp.gate_proj.weight");
  int64_t layers = model.value("layers", int64_t{0}), heads = model.value("heads", int64_t{0});
  int64_t kvHeads = model.value("kv_heads", heads);
  if (layers <= 0 || heads <= 0 || kvHeads <= 0)
    throw rt::Error("cannot write " + path + ": the model's layers/heads are missing");
  json config = {{"architectures", {"LlamaForCausalLM"}},
                 {"model_type", "llama"},
                 {"vocab_size", embed[0]},
                 {"hidden_size", embed[1]},
                 {"intermediate_size", gate[0]},
                 {"num_hidden_layers", layers},
                 {"num_attention_heads", heads},
                 {"num_key_value_heads", kvHeads},
                 {"max_position_embeddings", model.value("positions", int64_t{4096})},
                 {"rms_norm_eps", model.value("norm_eps", 1e-5)},
                 {"rope_theta", model.value("rope_theta", 10000.0)},
                 {"hidden_act", "silu"},
                 {"tie_word_embeddings", false},
                 {"attention_bias", false},
                 {"torch_dtype", "float32"}};
  std::ofstream out(path);
  out << config.dump(2) << "\n";
  if (!out)
    throw rt::Error("cannot write " + path);
}

} // namespace

void consolidateCheckpoint(const std::string &checkpoint, const std::string &outFile) {
  std::error_code ec;
  std::string stepDir = fs::is_regular_file(fs::path(checkpoint) / kManifest, ec)
                            ? checkpoint
                            : latestCheckpoint(checkpoint);
  Manifest manifest = readManifest(stepDir);

  std::map<std::string, TensorData> params;
  std::vector<BlockTarget> targets;
  for (const TensorMeta &t : manifest.tensors) {
    if (t.name.rfind("param:", 0) != 0)
      continue;
    TensorData &d = params[t.name.substr(6)];
    d.dtype = rt::dtype_name(t.dtype);
    d.shape = t.globalShape;
    d.bytes.resize(rt::num_elements(t.globalShape) * rt::dtype_size(t.dtype));
    targets.push_back(BlockTarget{t.name, std::vector<int64_t>(t.globalShape.size(), 0),
                                  t.globalShape, d.bytes.data()});
  }
  if (params.empty())
    throw rt::Error(join(stepDir, kManifest) + ": the checkpoint has no parameters");
  loadBlocks(stepDir, manifest, targets);

  // GPT-2 keeps q, k and v in one Conv1D: c_attn = cat([q, k, v], dim 1).
  const std::string q = ".attn.q_proj.";
  std::vector<std::string> names;
  for (const auto &[name, data] : params)
    names.push_back(name);
  for (const std::string &name : names) {
    size_t at = name.find(q);
    if (at == std::string::npos || !params.count(name))
      continue;
    std::string prefix = name.substr(0, at) + ".attn.", suffix = name.substr(at + q.size());
    std::string k = prefix + "k_proj." + suffix, v = prefix + "v_proj." + suffix;
    if (!params.count(k) || !params.count(v))
      continue;
    std::optional<TensorData> fused = concatLastDim({&params[name], &params[k], &params[v]});
    if (!fused)
      throw rt::Error("cannot export '" + stepDir + "': '" + name + "', '" + k + "' and '" + v +
                      "' do not concatenate into c_attn (shapes " +
                      rt::shape_str(params[name].shape) + ", " + rt::shape_str(params[k].shape) +
                      ", " + rt::shape_str(params[v].shape) + ")");
    params.erase(name);
    params.erase(k);
    params.erase(v);
    params[prefix + "c_attn." + suffix] = std::move(*fused);
  }
  dropVocabularyPadding(manifest.model, params);
  write_safetensors(outFile, params,
                    {{"format", "pt"},
                     {"step", std::to_string(manifest.step)},
                     {"mesh", manifest.mesh.str()},
                     {"source", manifest.source}});
  const std::string family = manifest.model.value("family", "");
  const std::string configPath = (fs::path(outFile).parent_path() / "config.json").string();
  if (family == "gpt2")
    writeGpt2Config(manifest.model, params, configPath);
  else if (family == "llama")
    writeLlamaConfig(manifest.model, params, configPath);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

void copyIntersection(const void *src, const std::vector<int64_t> &srcOffsets,
                      const std::vector<int64_t> &srcShape, void *dst,
                      const std::vector<int64_t> &dstOffsets,
                      const std::vector<int64_t> &dstShape, int64_t elementBytes) {
  const size_t rank = srcShape.size();
  std::vector<int64_t> lo(rank), hi(rank);
  for (size_t d = 0; d < rank; ++d) {
    lo[d] = std::max(srcOffsets[d], dstOffsets[d]);
    hi[d] = std::min(srcOffsets[d] + srcShape[d], dstOffsets[d] + dstShape[d]);
    if (lo[d] >= hi[d])
      return;
  }
  const auto *s = static_cast<const uint8_t *>(src);
  auto *t = static_cast<uint8_t *>(dst);
  if (rank == 0) {
    std::memcpy(t, s, elementBytes);
    return;
  }
  // Walk the box's rows (all dims but the last); each row is one memcpy.
  const int64_t run = (hi[rank - 1] - lo[rank - 1]) * elementBytes;
  std::vector<int64_t> idx(lo.begin(), lo.end());
  while (true) {
    int64_t si = 0, di = 0;
    for (size_t d = 0; d < rank; ++d) {
      si = si * srcShape[d] + (idx[d] - srcOffsets[d]);
      di = di * dstShape[d] + (idx[d] - dstOffsets[d]);
    }
    std::memcpy(t + di * elementBytes, s + si * elementBytes, run);
    int d = static_cast<int>(rank) - 2;
    for (; d >= 0; --d) {
      if (++idx[d] < hi[d])
        break;
      idx[d] = lo[d];
    }
    if (d < 0)
      return;
  }
}

} // namespace shardc::ckpt
