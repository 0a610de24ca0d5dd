//===- CheckpointTest.cpp - sharded checkpoints without MPI ---------------===//
//
// Four synthetic ranks of a 2x2 mesh save blocks of known global tensors;
// loading on other meshes and shardings must give every rank exactly its
// slice of the global tensor.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/Safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

using namespace shardc;
using namespace shardc::ckpt;
namespace fs = std::filesystem;

namespace {

rt::MeshDesc mesh(std::vector<int64_t> sizes) {
  rt::MeshDesc m;
  m.sizes = std::move(sizes);
  for (size_t i = 0; i < m.sizes.size(); ++i)
    m.names.push_back(i == 0 ? "dp" : "tp");
  return m;
}

/// Global tensors with a distinct value per element, and their shardings on
/// the 2x2 mesh the test saves from.
struct Synthetic {
  Manifest manifest;
  std::map<std::string, std::vector<uint8_t>> globals;

  Synthetic() {
    manifest.mesh = mesh({2, 2});
    manifest.source = "synthetic.mlir";
    manifest.strategy = "test";
    manifest.precision = "fp32";
    manifest.step = 10;
    manifest.nextPosition = 1234;
    manifest.seed = 7;
    manifest.lossScale = 65536.0;
    manifest.tensors = {
        {"param:a", rt::DType::F32, {4, 8}, {{0}, {1}}},
        {"param:b", rt::DType::F32, {8, 4}, {{0, 1}, {}}},
        {"param:c", rt::DType::BF16, {4, 4}, {{}, {1}}},
        {"adam_m:a", rt::DType::F32, {2, 4, 8}, {{}, {1}, {0}}},
        {"step", rt::DType::F32, {}, {}},
    };
    int tensor = 0;
    for (const TensorMeta &t : manifest.tensors) {
      int64_t n = rt::num_elements(t.globalShape);
      std::vector<uint8_t> bytes(n * rt::dtype_size(t.dtype));
      for (int64_t i = 0; i < n; ++i) {
        if (t.dtype == rt::DType::F32)
          reinterpret_cast<float *>(bytes.data())[i] = 1000.0f * tensor + i;
        else
          reinterpret_cast<uint16_t *>(bytes.data())[i] = static_cast<uint16_t>(100 * tensor + i);
      }
      globals[t.name] = std::move(bytes);
      ++tensor;
    }
  }

  /// The block of `t` (sharded as `sharding`) that `rank` of `m` owns.
  std::vector<uint8_t> block(const TensorMeta &t, const rt::MeshDesc &m, int64_t rank) const {
    std::vector<int64_t> local = t.localShape(m);
    std::vector<uint8_t> out(rt::num_elements(local) * rt::dtype_size(t.dtype));
    copyIntersection(globals.at(t.name).data(), std::vector<int64_t>(t.globalShape.size(), 0),
                     t.globalShape, out.data(), t.blockOffsets(m, rank), local,
                     rt::dtype_size(t.dtype));
    return out;
  }

  /// Saves all four ranks into `dir` at manifest.step; returns the step dir.
  std::string save(const std::string &dir) const {
    beginCheckpoint(dir, manifest.step);
    std::vector<std::vector<uint8_t>> keep;
    for (int64_t r = 0; r < manifest.mesh.numRanks(); ++r) {
      std::vector<BlockView> views;
      for (const TensorMeta &t : manifest.tensors) {
        keep.push_back(block(t, manifest.mesh, r));
        views.push_back({t.name, keep.back().data()});
      }
      writeRankBlocks(dir, manifest, r, views);
    }
    return commitCheckpoint(dir, manifest);
  }
};

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() /
           ("shardc_ckpt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name()))
              .string();
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  /// Loads every rank of `m` with shardings `shardings` (by tensor name;
  /// missing: replicated) and checks each block against the global slice.
  void expectLoads(const std::string &stepDir, const rt::MeshDesc &m,
                   const std::map<std::string, std::vector<rt::Axes>> &shardings) {
    Manifest saved = readManifest(stepDir);
    for (int64_t r = 0; r < m.numRanks(); ++r) {
      std::vector<TensorMeta> metas;
      for (const TensorMeta &t : saved.tensors) {
        TensorMeta u = t;
        auto it = shardings.find(t.name);
        u.sharding = it != shardings.end() ? it->second
                                           : std::vector<rt::Axes>(t.globalShape.size());
        metas.push_back(u);
      }
      std::vector<std::vector<uint8_t>> blocks;
      std::vector<BlockTarget> targets;
      for (const TensorMeta &u : metas) {
        std::vector<int64_t> local = u.localShape(m);
        blocks.emplace_back(rt::num_elements(local) * rt::dtype_size(u.dtype), 0xAB);
        targets.push_back({u.name, u.blockOffsets(m, r), local, blocks.back().data()});
      }
      loadBlocks(stepDir, saved, targets, -1);
      for (size_t i = 0; i < metas.size(); ++i)
        EXPECT_EQ(blocks[i], data.block(metas[i], m, r))
            << metas[i].name << " on mesh " << m.str() << ", rank " << r;
    }
  }

  std::string dir;
  Synthetic data;
};

} // namespace

TEST_F(CheckpointTest, CopyIntersectionOfBoxes) {
  // src: rows 1..2, cols 2..4 of a 4x6; dst: rows 0..1, cols 0..3.
  std::vector<int32_t> src = {1, 2, 3, 4, 5, 6}, dst(8, 0);
  copyIntersection(src.data(), {1, 2}, {2, 3}, dst.data(), {0, 0}, {2, 4}, 4);
  EXPECT_EQ(dst, (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 1, 2}));
  std::vector<int32_t> none(4, 9);
  copyIntersection(src.data(), {1, 2}, {2, 3}, none.data(), {3, 0}, {1, 4}, 4);
  EXPECT_EQ(none, (std::vector<int32_t>(4, 9)));
}

TEST_F(CheckpointTest, ReshardsOntoOtherMeshes) {
  std::string stepDir = data.save(dir);
  Manifest m = readManifest(stepDir);
  EXPECT_EQ(m.step, 10);
  EXPECT_EQ(m.nextPosition, 1234);
  EXPECT_EQ(m.seed, 7u);
  EXPECT_EQ(m.mesh.sizes, (std::vector<int64_t>{2, 2}));
  ASSERT_TRUE(m.lossScale);
  EXPECT_EQ(*m.lossScale, 65536.0);

  // One rank: everything replicated.
  expectLoads(stepDir, mesh({1}), {});
  // The same mesh and shardings.
  std::map<std::string, std::vector<rt::Axes>> same;
  for (const TensorMeta &t : data.manifest.tensors)
    same[t.name] = t.sharding;
  expectLoads(stepDir, mesh({2, 2}), same);
  // The same mesh, other shardings.
  expectLoads(stepDir, mesh({2, 2}),
              {{"param:a", {{1}, {0}}},
               {"param:b", {{1, 0}, {}}},
               {"param:c", {{0}, {1}}},
               {"adam_m:a", {{}, {0, 1}, {}}}});
  // 4x1 and 1x4.
  expectLoads(stepDir, mesh({4, 1}),
              {{"param:a", {{0}, {1}}}, {"param:b", {{}, {0}}}, {"adam_m:a", {{}, {}, {0}}}});
  expectLoads(stepDir, mesh({1, 4}),
              {{"param:a", {{1}, {}}}, {"param:b", {{0, 1}, {}}}, {"param:c", {{}, {1}}},
               {"adam_m:a", {{}, {1}, {}}}});
}

TEST_F(CheckpointTest, SameMeshReadsOnlyItsOwnFile) {
  std::string stepDir = data.save(dir);
  // Damage every other rank's file: rank 0 on the saved mesh must not care.
  for (int r = 1; r < 4; ++r)
    fs::resize_file(fs::path(stepDir) / rankFileName(r), 10);
  Manifest m = readManifest(stepDir);
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<BlockTarget> targets;
  for (const TensorMeta &t : m.tensors) {
    std::vector<int64_t> local = t.localShape(m.mesh);
    blocks.emplace_back(rt::num_elements(local) * rt::dtype_size(t.dtype));
    targets.push_back({t.name, t.blockOffsets(m.mesh, 0), local, blocks.back().data()});
  }
  loadBlocks(stepDir, m, targets, /*preferredRank=*/0);
  for (size_t i = 0; i < m.tensors.size(); ++i)
    EXPECT_EQ(blocks[i], data.block(m.tensors[i], m.mesh, 0)) << m.tensors[i].name;
}

TEST_F(CheckpointTest, AtomicLayout) {
  std::string stepDir = data.save(dir);
  EXPECT_EQ(stepDir, (fs::path(dir) / "step-000010").string());
  for (const auto &e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  for (int r = 0; r < 4; ++r)
    EXPECT_TRUE(fs::is_regular_file(fs::path(stepDir) / rankFileName(r)));
  EXPECT_TRUE(fs::is_regular_file(fs::path(stepDir) / "manifest.json"));
  auto latest = [&] {
    std::ifstream in(fs::path(dir) / "latest");
    std::string s;
    std::getline(in, s);
    return s;
  };
  EXPECT_EQ(latest(), "step-000010");

  // An existing step is never overwritten.
  auto before = fs::last_write_time(fs::path(stepDir) / "manifest.json");
  try {
    beginCheckpoint(dir, 10);
    FAIL() << "overwrote step-000010";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("step-000010"), std::string::npos) << e.what();
  }
  EXPECT_EQ(before, fs::last_write_time(fs::path(stepDir) / "manifest.json"));

  // A crash's leftovers (a .tmp directory) are neither resumed nor kept.
  fs::create_directories(fs::path(dir) / "step-000030.tmp");
  std::ofstream(fs::path(dir) / "step-000030.tmp" / "rank-00009.safetensors") << "junk";
  EXPECT_EQ(latestCheckpoint(dir), stepDir);

  data.manifest.step = 30;
  std::string next = data.save(dir);
  EXPECT_EQ(latest(), "step-000030");
  EXPECT_EQ(latestCheckpoint(dir), next);
  EXPECT_FALSE(fs::exists(fs::path(next) / "rank-00009.safetensors"));
  EXPECT_FALSE(fs::exists(fs::path(dir) / "step-000030.tmp"));
}

TEST_F(CheckpointTest, CommitNeedsEveryRank) {
  beginCheckpoint(dir, data.manifest.step);
  std::vector<uint8_t> a = data.block(data.manifest.tensors[0], data.manifest.mesh, 0);
  try {
    commitCheckpoint(dir, data.manifest);
    FAIL() << "committed without rank files";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("rank-00000.safetensors"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(fs::path(dir) / "step-000010"));
  EXPECT_FALSE(fs::exists(fs::path(dir) / "latest"));
}

namespace {

/// Runs `f`, expecting an rt::Error whose message contains `needle`.
template <class F> void expectError(F &&f, const std::string &needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

/// Loads the whole checkpoint onto one rank (reads every file).
void loadAll(const std::string &stepDir) {
  Manifest m = readManifest(stepDir);
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<BlockTarget> targets;
  for (const TensorMeta &t : m.tensors) {
    blocks.emplace_back(rt::num_elements(t.globalShape) * rt::dtype_size(t.dtype));
    targets.push_back({t.name, std::vector<int64_t>(t.globalShape.size(), 0), t.globalShape,
                       blocks.back().data()});
  }
  loadBlocks(stepDir, m, targets);
}

/// Rewrites one rank file with `edit` applied to its tensors.
template <class F> void rewriteRankFile(const std::string &path, F &&edit) {
  auto tensors = read_safetensors(path);
  edit(tensors);
  write_safetensors(path, tensors);
}

} // namespace

TEST_F(CheckpointTest, MissingRankFile) {
  std::string stepDir = data.save(dir);
  fs::remove(fs::path(stepDir) / "rank-00002.safetensors");
  expectError([&] { loadAll(stepDir); }, "rank-00002.safetensors");
}

TEST_F(CheckpointTest, TruncatedRankFile) {
  std::string stepDir = data.save(dir);
  fs::path file = fs::path(stepDir) / "rank-00001.safetensors";
  fs::resize_file(file, fs::file_size(file) - 3);
  expectError([&] { loadAll(stepDir); }, "rank-00001.safetensors");
}

TEST_F(CheckpointTest, WrongShapeInRankFile) {
  std::string stepDir = data.save(dir);
  std::string path = (fs::path(stepDir) / "rank-00003.safetensors").string();
  rewriteRankFile(path, [](auto &t) { t.at("param:a").shape = {4, 2}; });
  expectError([&] { loadAll(stepDir); }, "rank-00003.safetensors");
  expectError([&] { loadAll(stepDir); }, "param:a");
}

TEST_F(CheckpointTest, WrongDtypeInRankFile) {
  std::string stepDir = data.save(dir);
  std::string path = (fs::path(stepDir) / "rank-00000.safetensors").string();
  rewriteRankFile(path, [](auto &t) { t.at("param:c").dtype = "F16"; });
  expectError([&] { loadAll(stepDir); }, "rank-00000.safetensors");
}

TEST_F(CheckpointTest, WrongNameInRankFile) {
  std::string stepDir = data.save(dir);
  std::string path = (fs::path(stepDir) / "rank-00001.safetensors").string();
  rewriteRankFile(path, [](auto &t) {
    t["param:renamed"] = t.at("param:b");
    t.erase("param:b");
  });
  expectError([&] { loadAll(stepDir); }, "rank-00001.safetensors");
}

TEST_F(CheckpointTest, CorruptManifest) {
  std::string stepDir = data.save(dir);
  std::string path = (fs::path(stepDir) / "manifest.json").string();
  std::ofstream(path) << "{\"format\": \"shardc-checkpoint\", \"version\": 1, ";
  expectError([&] { readManifest(stepDir); }, path);
  std::ofstream(path) << "{\"format\": \"shardc-checkpoint\", \"version\": 1}";
  expectError([&] { readManifest(stepDir); }, path);
  std::ofstream(path) << "[]";
  expectError([&] { readManifest(stepDir); }, path);
}

TEST_F(CheckpointTest, NoCheckpointOrBrokenLatest) {
  expectError([&] { latestCheckpoint(dir); }, dir);
  fs::create_directories(dir);
  expectError([&] { latestCheckpoint(dir); }, dir);
  data.save(dir);
  std::ofstream(fs::path(dir) / "latest") << "step-000099\n";
  expectError([&] { latestCheckpoint(dir); }, "latest");
}

TEST_F(CheckpointTest, IncompatibleProgram) {
  std::string stepDir = data.save(dir);
  Manifest m = readManifest(stepDir);
  rt::Program p;
  p.source = "synthetic.mlir";
  p.mesh = mesh({1});
  for (const TensorMeta &t : m.tensors) {
    rt::BoundaryTensor b;
    b.kind = "state";
    b.name = t.name;
    b.local = rt::TensorType{t.dtype, t.globalShape};
    b.globalShape = t.globalShape;
    b.sharding.resize(t.globalShape.size());
    p.tensors.push_back(b);
  }
  checkCompatible(stepDir, m, p); // resharded onto one rank: fine
  std::string manifestPath = (fs::path(stepDir) / "manifest.json").string();

  rt::Program other = p;
  other.source = "other.mlir";
  expectError([&] { checkCompatible(stepDir, m, other); }, manifestPath);
  other = p;
  other.tensors[1].globalShape = {8, 8};
  expectError([&] { checkCompatible(stepDir, m, other); }, "param:b");
  other = p;
  other.tensors[2].local.dtype = rt::DType::F32;
  expectError([&] { checkCompatible(stepDir, m, other); }, "param:c");
  other = p;
  other.tensors.pop_back();
  expectError([&] { checkCompatible(stepDir, m, other); }, "'step'");
  other = p;
  other.tensors.push_back(other.tensors[0]);
  other.tensors.back().name = "loss_scale";
  expectError([&] { checkCompatible(stepDir, m, other); }, "loss_scale");
}

TEST_F(CheckpointTest, ConsolidatesGpt2Names) {
  Synthetic g;
  g.manifest.source = "gpt2-tiny.mlir";
  g.manifest.tensors = {
      {"param:transformer.h.0.attn.q_proj.weight", rt::DType::F32, {4, 4}, {{}, {1}}},
      {"param:transformer.h.0.attn.k_proj.weight", rt::DType::F32, {4, 4}, {{}, {1}}},
      {"param:transformer.h.0.attn.v_proj.weight", rt::DType::F32, {4, 4}, {{}, {1}}},
      {"param:transformer.h.0.attn.q_proj.bias", rt::DType::F32, {4}, {{1}}},
      {"param:transformer.h.0.attn.k_proj.bias", rt::DType::F32, {4}, {{1}}},
      {"param:transformer.h.0.attn.v_proj.bias", rt::DType::F32, {4}, {{1}}},
      {"param:transformer.wte.weight", rt::DType::F32, {8, 4}, {{0, 1}, {}}},
      {"adam_m:transformer.wte.weight", rt::DType::F32, {8, 4}, {{0, 1}, {}}},
      {"step", rt::DType::F32, {}, {}},
  };
  g.globals.clear();
  int tensor = 0;
  for (const TensorMeta &t : g.manifest.tensors) {
    std::vector<float> v(rt::num_elements(t.globalShape));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = 100.0f * tensor + i;
    auto *p = reinterpret_cast<uint8_t *>(v.data());
    g.globals[t.name].assign(p, p + v.size() * 4);
    ++tensor;
  }
  g.save(dir);
  std::string out = dir + "/model.safetensors";
  consolidateCheckpoint(dir, out);

  std::map<std::string, std::string> meta;
  auto file = read_safetensors(out, &meta);
  EXPECT_EQ(meta["step"], "10");
  EXPECT_EQ(meta["mesh"], "dp=2,tp=2");
  EXPECT_EQ(meta["source"], "gpt2-tiny.mlir");
  std::vector<std::string> names;
  for (const auto &[name, t] : file)
    names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"transformer.h.0.attn.c_attn.bias",
                                             "transformer.h.0.attn.c_attn.weight",
                                             "transformer.wte.weight"}));
  auto floats = [&](const std::string &name) {
    const TensorData &t = file.at(name);
    const auto *f = reinterpret_cast<const float *>(t.bytes.data());
    return std::vector<float>(f, f + t.bytes.size() / 4);
  };
  // c_attn.weight [4, 12]: row r = q[r], k[r], v[r].
  EXPECT_EQ(file.at("transformer.h.0.attn.c_attn.weight").shape, (std::vector<int64_t>{4, 12}));
  std::vector<float> w = floats("transformer.h.0.attn.c_attn.weight");
  for (int r = 0; r < 4; ++r)
    for (int part = 0; part < 3; ++part)
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(w[r * 12 + part * 4 + c], 100.0f * part + r * 4 + c) << r << " " << part;
  EXPECT_EQ(file.at("transformer.h.0.attn.c_attn.bias").shape, (std::vector<int64_t>{12}));
  std::vector<float> b = floats("transformer.h.0.attn.c_attn.bias");
  for (int part = 0; part < 3; ++part)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(b[part * 4 + c], 100.0f * (3 + part) + c);
  std::vector<float> wte = floats("transformer.wte.weight");
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(wte[i], 600.0f + i);

  // A step directory works as well as the checkpoint directory.
  consolidateCheckpoint(dir + "/step-000010", dir + "/again.safetensors");
  EXPECT_EQ(read_safetensors(dir + "/again.safetensors").size(), 3u);
}
