//===- InitSourceTest.cpp - --init-from blocks read from a file ------------===//
//
// ckpt::InitSource reads a parameter's block (what one rank holds) straight
// from the file: the values equal the same block of the whole parameter
// (readWhole), fused c_attn columns and zero padding rows included, and the
// bytes read are exactly the block's (a rank never reads the whole file).
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/InitFrom.h"

#include "runtime/Error.h"
#include "runtime/checkpoint/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace shardc;
using namespace shardc::ckpt;
namespace fs = std::filesystem;

namespace {

TensorData f32(std::vector<int64_t> shape, float base) {
  TensorData t;
  t.dtype = "F32";
  t.shape = shape;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  t.bytes.resize(n * 4);
  for (int64_t i = 0; i < n; ++i) {
    float v = base + static_cast<float>(i);
    std::memcpy(t.bytes.data() + i * 4, &v, 4);
  }
  return t;
}

float at(const rt::HostTensor &t, int64_t i) {
  float v;
  std::memcpy(&v, t.bytes.data() + i * 4, 4);
  return v;
}

class InitSourceTest : public testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "shardc-initsource-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir = pattern;
    // HF GPT-2 layout: 6 vocabulary rows (the model pads to 8), a fused
    // c_attn [4, 12] = q|k|v and its bias.
    write_safetensors(dir + "/hf.safetensors",
                      {{"wte.weight", f32({6, 4}, 0)},
                       {"h.0.attn.c_attn.weight", f32({4, 12}, 1000)},
                       {"h.0.attn.c_attn.bias", f32({12}, 2000)}});
  }
  void TearDown() override { fs::remove_all(dir); }

  std::vector<InitParam> params() const {
    return {{"transformer.wte.weight", true, {8, 4}},
            {"transformer.h.0.attn.q_proj.weight", false, {4, 4}},
            {"transformer.h.0.attn.k_proj.weight", false, {4, 4}},
            {"transformer.h.0.attn.v_proj.weight", false, {4, 4}},
            {"transformer.h.0.attn.q_proj.bias", false, {4}},
            {"transformer.h.0.attn.k_proj.bias", false, {4}},
            {"transformer.h.0.attn.v_proj.bias", false, {4}}};
  }
  std::string dir;
};

TEST_F(InitSourceTest, BlocksAreTheWholeParametersBlocks) {
  InitSource src(dir + "/hf.safetensors", params());
  EXPECT_EQ(src.bytesRead(), 0u); // the constructor reads the header only
  for (const InitParam &p : params()) {
    rt::HostTensor whole = src.readWhole(p.name);
    ASSERT_EQ(whole.shape, p.shape);
    // Every split a rank can hold: halves of each dim.
    for (size_t d = 0; d < p.shape.size(); ++d)
      for (int64_t half = 0; half < 2; ++half) {
        std::vector<int64_t> offsets(p.shape.size(), 0), shape = p.shape;
        shape[d] /= 2;
        offsets[d] = half * shape[d];
        uint64_t before = src.bytesRead();
        rt::HostTensor block = src.readBlock(p.name, offsets, shape);
        int64_t inner = p.shape.size() == 2 ? p.shape[1] : 1;
        int64_t bw = shape.size() == 2 ? shape[1] : 1;
        int64_t padRows = 0;
        for (int64_t i = 0; i < block.numel(); ++i) {
          int64_t r = shape.size() == 2 ? i / bw : 0, c = shape.size() == 2 ? i % bw : i;
          int64_t gi = shape.size() == 2 ? (offsets[0] + r) * inner + offsets[1] + c
                                         : offsets[0] + c;
          EXPECT_EQ(at(block, i), at(whole, gi)) << p.name << " dim " << d << " half " << half;
        }
        if (p.name == "transformer.wte.weight") // rows 6 and 7 are padding: zero, not read
          for (int64_t r = offsets[0]; r < offsets[0] + shape[0]; ++r)
            padRows += r >= 6;
        EXPECT_EQ(src.bytesRead() - before,
                  static_cast<uint64_t>((block.numel() - padRows * bw) * 4))
            << p.name;
      }
  }
  // The fused layout: k is columns 4..7 of c_attn, the padding rows zero.
  rt::HostTensor k = src.readWhole("transformer.h.0.attn.k_proj.weight");
  EXPECT_EQ(at(k, 0), 1004.f);
  EXPECT_EQ(at(k, 5), 1012.f + 5.f);
  // Known values, not only readWhole against itself: q/k/v weight columns and
  // bias slices of the fused tensors.
  EXPECT_EQ(at(src.readWhole("transformer.h.0.attn.q_proj.weight"), 13), 1000.f + 3 * 12 + 1);
  EXPECT_EQ(at(src.readWhole("transformer.h.0.attn.v_proj.weight"), 0), 1008.f);
  EXPECT_EQ(at(src.readWhole("transformer.h.0.attn.q_proj.bias"), 3), 2003.f);
  EXPECT_EQ(at(src.readWhole("transformer.h.0.attn.k_proj.bias"), 0), 2004.f);
  EXPECT_EQ(at(src.readWhole("transformer.h.0.attn.v_proj.bias"), 3), 2011.f);
  EXPECT_EQ(at(src.readBlock("transformer.h.0.attn.v_proj.bias", {2}, {2}), 0), 2010.f);
  EXPECT_EQ(at(src.readBlock("transformer.h.0.attn.k_proj.weight", {2, 2}, {2, 2}), 1),
            1000.f + 2 * 12 + 4 + 3);
  rt::HostTensor wte = src.readWhole("transformer.wte.weight");
  EXPECT_EQ(at(wte, 23), 23.f);
  EXPECT_EQ(at(wte, 24), 0.f);
  EXPECT_EQ(at(wte, 31), 0.f);
}

TEST_F(InitSourceTest, BlocksOutsideTheParameterAreErrors) {
  InitSource src(dir + "/hf.safetensors", params());
  EXPECT_THROW(src.readBlock("transformer.wte.weight", {6, 0}, {4, 4}), rt::Error);
  EXPECT_THROW(src.readBlock("transformer.wte.weight", {0}, {4}), rt::Error);
  EXPECT_THROW(src.readBlock("no.such.param", {0, 0}, {1, 1}), rt::Error);
}

TEST_F(InitSourceTest, WholeTensorsAreCheckedAgainstTheirChecksums) {
  // shardc writes a CRC32C per tensor: a flipped byte in a tensor read whole
  // is an error; a row-block of the same tensor cannot be checked.
  std::vector<InitParam> own = {{"a", false, {4, 4}}};
  std::string path = dir + "/own.safetensors";
  write_safetensors(path, {{"a", f32({4, 4}, 0)}});
  EXPECT_EQ(at(InitSource(path, own).readWhole("a"), 5), 5.f);
  SafetensorsIndex index = index_safetensors(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(index.dataStart + index.tensors.at("a").begin + 4 * 9));
    char byte = 0x7f;
    f.write(&byte, 1);
  }
  InitSource damaged(path, own);
  try {
    damaged.readWhole("a");
    FAIL() << "a damaged tensor read whole must fail its checksum";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("fails its CRC32C check"), std::string::npos) << e.what();
  }
  EXPECT_EQ(at(damaged.readBlock("a", {0, 0}, {2, 4}), 5), 5.f); // rows 0-1: untouched
}

} // namespace
