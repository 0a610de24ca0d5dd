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
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
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
  p.precision = "fp32";
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
  // bf16 keeps fp32 state, so the tensors alone would match.
  other = p;
  other.precision = "bf16";
  expectError([&] { checkCompatible(stepDir, m, other); },
              manifestPath + ": \"precision\" is fp32 but this program was compiled with "
                             "--precision bf16");
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

TEST_F(CheckpointTest, ExportsLlamaWithItsConfigAndTrueVocabulary) {
  // A LLaMA step (HF names already): the token table and lm_head keep their
  // padding rows unless the loss stated its classes (the descriptor's model
  // "classes"); then only the class rows are exported, unchanged. config.json
  // (LlamaConfig) takes its sizes from the tensors and the model.
  Synthetic g;
  g.manifest.tensors = {
      {"param:model.embed_tokens.weight", rt::DType::F32, {8, 4}, {{0, 1}, {}}},
      {"param:lm_head.weight", rt::DType::F32, {8, 4}, {{}, {1}}},
      {"param:model.layers.0.mlp.gate_proj.weight", rt::DType::F32, {6, 4}, {{}, {}}},
      {"step", rt::DType::F32, {}, {}},
  };
  g.globals.clear();
  for (const TensorMeta &t : g.manifest.tensors) {
    std::vector<float> v(rt::num_elements(t.globalShape));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(i);
    auto *p = reinterpret_cast<uint8_t *>(v.data());
    g.globals[t.name].assign(p, p + v.size() * 4);
  }
  for (bool stated : {false, true}) {
    std::string sub = dir + (stated ? "/classes" : "/no-classes");
    g.manifest.model = {{"family", "llama"}, {"vocab", 6},       {"layers", 1},
                        {"heads", 2},        {"kv_heads", 1},    {"positions", 64},
                        {"norm_eps", 1e-5},  {"rope_theta", 5e5}};
    if (stated)
      g.manifest.model["classes"] = 6;
    g.save(sub);
    consolidateCheckpoint(sub, sub + "/model.safetensors");
    auto file = read_safetensors(sub + "/model.safetensors");
    const int64_t rows = stated ? 6 : 8;
    for (const char *name : {"model.embed_tokens.weight", "lm_head.weight"}) {
      const TensorData &t = file.at(name);
      EXPECT_EQ(t.shape, (std::vector<int64_t>{rows, 4})) << name;
      const auto *f = reinterpret_cast<const float *>(t.bytes.data());
      for (int64_t i = 0; i < rows * 4; ++i)
        ASSERT_EQ(f[i], static_cast<float>(i)) << name;
    }
    EXPECT_EQ(file.at("model.layers.0.mlp.gate_proj.weight").shape,
              (std::vector<int64_t>{6, 4}));
    std::ifstream in(sub + "/config.json");
    nlohmann::json c = nlohmann::json::parse(in);
    EXPECT_EQ(c["architectures"][0], "LlamaForCausalLM");
    EXPECT_EQ(c["vocab_size"], rows);
    EXPECT_EQ(c["hidden_size"], 4);
    EXPECT_EQ(c["intermediate_size"], 6);
    EXPECT_EQ(c["num_hidden_layers"], 1);
    EXPECT_EQ(c["num_attention_heads"], 2);
    EXPECT_EQ(c["num_key_value_heads"], 1);
    EXPECT_EQ(c["max_position_embeddings"], 64);
    EXPECT_EQ(c["rope_theta"], 5e5);
    EXPECT_EQ(c["tie_word_embeddings"], false);
  }
}

//===----------------------------------------------------------------------===//
// Checksums
//===----------------------------------------------------------------------===//

namespace {

/// A safetensors file as its header JSON and its data buffer.
struct RawFile {
  nlohmann::json header;
  std::string data;

  explicit RawFile(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i)
      n |= uint64_t(uint8_t(bytes.at(i))) << (8 * i);
    header = nlohmann::json::parse(bytes.substr(8, n));
    data = bytes.substr(8 + n);
  }

  void write(const std::string &path) const {
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    std::string length(8, '\0');
    for (int i = 0; i < 8; ++i)
      length[i] = static_cast<char>(uint64_t(text.size()) >> (8 * i));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << length << text << data;
  }

  /// Where tensor `name`'s bytes start in `data`.
  size_t offset(const std::string &name) const {
    return header.at(name).at("data_offsets").at(0).get<size_t>();
  }
};

/// Runs `f`, expecting an rt::Error whose message contains every needle.
template <class F> void expectErrorNaming(F &&f, const std::vector<std::string> &needles) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << needles.front();
  } catch (const rt::Error &e) {
    for (const std::string &needle : needles)
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "'" << e.what() << "' lacks '" << needle << "'";
  }
}

} // namespace

TEST_F(CheckpointTest, RankFilesCarryChecksums) {
  std::string stepDir = data.save(dir);
  EXPECT_EQ(readManifest(stepDir).version, kManifestVersion);
  for (int r = 0; r < 4; ++r) {
    RawFile file((fs::path(stepDir) / rankFileName(r)).string());
    for (const TensorMeta &t : data.manifest.tensors)
      EXPECT_TRUE(file.header.at("__metadata__").contains("crc32c:" + t.name))
          << "rank " << r << ", " << t.name;
  }
}

TEST_F(CheckpointTest, FlippedMantissaBitIsAnError) {
  // The lowest mantissa bit of one element: the value stays finite (no NaN
  // loss would ever show it) and the file's structure valid; only the
  // checksum can tell.
  std::string stepDir = data.save(dir);
  std::string path = (fs::path(stepDir) / rankFileName(2)).string();
  RawFile file(path);
  size_t at = file.offset("param:b") + 4; // element 1, its low byte
  float before, after;
  std::memcpy(&before, file.data.data() + at, 4);
  file.data[at] = static_cast<char>(file.data[at] ^ 1);
  std::memcpy(&after, file.data.data() + at, 4);
  ASSERT_TRUE(std::isfinite(after) && after != before) << before << " -> " << after;
  file.write(path);

  std::vector<std::string> needles = {path + ": tensor 'param:b' fails its CRC32C check (stored ",
                                      "): the file is damaged"};
  expectErrorNaming([&] { loadAll(stepDir); }, needles);
  // Rank 2 resuming on the saved mesh reads only its own file: caught too.
  Manifest m = readManifest(stepDir);
  const TensorMeta &b = *m.find("param:b");
  std::vector<int64_t> local = b.localShape(m.mesh);
  std::vector<uint8_t> block(rt::num_elements(local) * 4);
  expectErrorNaming(
      [&] {
        loadBlocks(stepDir, m, {{b.name, b.blockOffsets(m.mesh, 2), local, block.data()}}, 2);
      },
      needles);
  // And so is `shardc export`.
  expectErrorNaming([&] { consolidateCheckpoint(dir, dir + "/model.safetensors"); }, needles);
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
}

TEST_F(CheckpointTest, FlippedByteInEveryTensorIsAnError) {
  std::string stepDir = data.save(dir);
  std::string path = (fs::path(stepDir) / rankFileName(1)).string();
  const RawFile good(path);
  for (const TensorMeta &t : data.manifest.tensors) {
    RawFile file = good;
    size_t at = file.offset(t.name);
    file.data[at] = static_cast<char>(file.data[at] ^ 0x40);
    file.write(path);
    expectErrorNaming([&] { loadAll(stepDir); },
                      {path, "tensor '" + t.name + "' fails its CRC32C check"});
  }
}

TEST_F(CheckpointTest, RankFileWithoutChecksumIsAnError) {
  std::string stepDir = data.save(dir);
  std::string path = (fs::path(stepDir) / rankFileName(3)).string();
  RawFile file(path);
  file.header.at("__metadata__").erase("crc32c:adam_m:a");
  file.write(path);
  expectErrorNaming([&] { loadAll(stepDir); },
                    {path + ": tensor 'adam_m:a' has no CRC32C checksum"});
}

TEST_F(CheckpointTest, Version1CheckpointsWithoutChecksumsLoad) {
  // Written before rank files carried checksums: they load, and a checksum
  // a file does have is still verified.
  std::string stepDir = data.save(dir);
  std::string manifestPath = (fs::path(stepDir) / "manifest.json").string();
  nlohmann::json j = nlohmann::json::parse(std::ifstream(manifestPath));
  j["version"] = 1;
  std::ofstream(manifestPath, std::ios::trunc) << j.dump(2);
  for (int r = 0; r < 4; ++r) {
    std::string path = (fs::path(stepDir) / rankFileName(r)).string();
    RawFile file(path);
    for (const TensorMeta &t : data.manifest.tensors)
      file.header.at("__metadata__").erase("crc32c:" + t.name);
    file.write(path);
  }
  EXPECT_EQ(readManifest(stepDir).version, 1);
  expectLoads(stepDir, mesh({1}), {});

  std::string path = (fs::path(stepDir) / rankFileName(0)).string();
  RawFile file(path);
  file.header["__metadata__"]["crc32c:step"] = "00000000";
  file.write(path);
  expectErrorNaming([&] { loadAll(stepDir); }, {path, "tensor 'step' fails its CRC32C check"});
}

//===----------------------------------------------------------------------===//
// Manifest fields
//===----------------------------------------------------------------------===//

namespace {

class ManifestFieldTest : public CheckpointTest {
protected:
  void SetUp() override {
    CheckpointTest::SetUp();
    stepDir = data.save(dir);
    path = (fs::path(stepDir) / "manifest.json").string();
    good = nlohmann::json::parse(std::ifstream(path));
  }

  /// Writes the saved manifest with `edit` applied and expects readManifest
  /// to fail naming the file and every needle.
  template <class F> void expectRejected(F &&edit, const std::vector<std::string> &needles) {
    nlohmann::json j = good;
    edit(j);
    std::ofstream(path, std::ios::trunc) << j.dump(2);
    std::vector<std::string> all = {path + ": "};
    all.insert(all.end(), needles.begin(), needles.end());
    SCOPED_TRACE(j.dump());
    expectErrorNaming([&] { readManifest(stepDir); }, all);
  }

  std::string stepDir, path;
  nlohmann::json good;
};

} // namespace

TEST_F(ManifestFieldTest, Precision) {
  expectRejected([](auto &j) { j["precision"] = "fp8"; },
                 {"\"precision\" is \"fp8\", not fp32, bf16 or fp16"});
  expectRejected([](auto &j) { j["precision"] = 16; }, {"\"precision\" is 16, not a string"});
}

TEST_F(ManifestFieldTest, Ranks) {
  expectRejected([](auto &j) { j["ranks"] = 0; }, {"\"ranks\" is 0, outside [1, 16777216]"});
  expectRejected([](auto &j) { j["ranks"] = 1000000; },
                 {"\"ranks\" is 1000000 but mesh dp=2,tp=2 has 4"});
  expectRejected([](auto &j) { j["ranks"] = 2; }, {"\"ranks\" is 2 but mesh dp=2,tp=2 has 4"});
  expectRejected([](auto &j) { j["ranks"] = 4.0; }, {"\"ranks\" is 4.0, not an integer"});
  expectRejected([](auto &j) { j["ranks"] = "4"; }, {"\"ranks\" is \"4\", not an integer"});
  expectRejected([](auto &j) { j["ranks"] = -4; }, {"\"ranks\" is -4, outside"});
  expectRejected([](auto &j) { j["ranks"] = 18446744073709551615u; },
                 {"\"ranks\" is 18446744073709551615, outside"});
  expectRejected([](auto &j) { j.erase("ranks"); }, {"no \"ranks\""});
}

TEST_F(ManifestFieldTest, MeshSizes) {
  expectRejected([](auto &j) { j["mesh"]["sizes"] = {0, 4}; },
                 {"\"mesh.sizes[0]\" is 0, outside [1, 16777216]"});
  expectRejected([](auto &j) { j["mesh"]["sizes"] = {int64_t(1) << 32, int64_t(1) << 32}; },
                 {"\"mesh.sizes[0]\" is 4294967296, outside"});
  expectRejected([](auto &j) { j["mesh"]["sizes"] = {1 << 13, 1 << 13}; },
                 {"\"mesh.sizes\" [8192,8192] make more than 16777216 ranks"});
  expectRejected([](auto &j) { j["mesh"]["sizes"] = {2.5, 2}; },
                 {"\"mesh.sizes[0]\" is 2.5, not an integer"});
  expectRejected([](auto &j) { j["mesh"]["sizes"] = {2}; },
                 {"\"mesh.names\" and \"mesh.sizes\" differ in length"});
  expectRejected([](auto &j) { j["mesh"] = "dp=2,tp=2"; }, {"\"mesh\" is \"dp=2,tp=2\""});
}

TEST_F(ManifestFieldTest, StepAndNextPosition) {
  expectRejected([](auto &j) { j["step"] = -1; }, {"\"step\" is -1, outside [0, "});
  expectRejected([](auto &j) { j["step"] = 10.5; }, {"\"step\" is 10.5, not an integer"});
  expectRejected([](auto &j) { j["next_position"] = 1e18; },
                 {"\"next_position\" is 1e+18, not an integer"});
  expectRejected([](auto &j) { j["next_position"] = int64_t(1000000000000000000); },
                 {"\"next_position\" is 1000000000000000000, outside [0, 9007199254740992]"});
  expectRejected([](auto &j) { j["next_position"] = -1; }, {"\"next_position\" is -1"});
  expectRejected([](auto &j) { j["next_position"] = nullptr; },
                 {"\"next_position\" is null, not an integer"});
}

TEST_F(ManifestFieldTest, SeedAndLossScale) {
  expectRejected([](auto &j) { j["seed"] = -7; }, {"\"seed\" is -7, negative"});
  expectRejected([](auto &j) { j["seed"] = 7.0; }, {"\"seed\" is 7.0, not an integer"});
  expectRejected([](auto &j) { j["loss_scale"] = "big"; },
                 {"\"loss_scale\" is \"big\", not a number or null"});
  // The whole range of --seed.
  nlohmann::json j = good;
  j["seed"] = 18446744073709551615u;
  std::ofstream(path, std::ios::trunc) << j.dump(2);
  EXPECT_EQ(readManifest(stepDir).seed, 18446744073709551615u);
}

TEST_F(ManifestFieldTest, VersionAndFormat) {
  expectRejected([](auto &j) { j["version"] = 3; }, {"manifest version 3"});
  expectRejected([](auto &j) { j["version"] = 2.0; }, {"\"version\" is 2.0, not an integer"});
  expectRejected([](auto &j) { j["format"] = 1; }, {"not a shardc checkpoint manifest"});
}

TEST_F(ManifestFieldTest, Tensors) {
  expectRejected([](auto &j) { j["tensors"][1]["global_shape"] = {8.0, 4}; },
                 {"\"tensors[1].global_shape[0]\" is 8.0, not an integer"});
  expectRejected([](auto &j) { j["tensors"][1]["global_shape"] = {-8, 4}; },
                 {"\"tensors[1].global_shape[0]\" is -8, outside"});
  expectRejected(
      [](auto &j) {
        j["tensors"][1]["global_shape"] = {int64_t(1) << 40, int64_t(1) << 40};
      },
      {"\"tensors[1].global_shape\" [1099511627776,1099511627776] holds more than 2^63 bytes"});
  expectRejected([](auto &j) { j["tensors"][0]["sharding"] = {{0}, {1e3}}; },
                 {"\"tensors[0].sharding[1][0]\" is 1000.0, not an integer"});
  expectRejected([](auto &j) { j["tensors"][0]["sharding"] = {{0}, {0}}; },
                 {"tensor 'param:a': mesh axis 0 splits it more than once"});
  expectRejected([](auto &j) { j["tensors"][0]["sharding"] = {{0}, {2}}; },
                 {"tensor 'param:a': dim 1 is split over mesh axis 2"});
  expectRejected([](auto &j) { j["tensors"][2]["dtype"] = "F8_E4M3"; },
                 {"\"tensors[2].dtype\" is \"F8_E4M3\", not a dtype of the runtime"});
  expectRejected([](auto &j) { j["tensors"][2].erase("name"); }, {"no \"tensors[2].name\""});
  expectRejected([](auto &j) { j["tensors"][3] = 5; }, {"\"tensors[3]\" is 5, not an object"});
}
