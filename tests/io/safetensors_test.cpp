// safetensors reader and writer: the fixture checkpoint, round trips of every
// dtype, shards, and hand-made corrupt files (each must fail with one line
// naming the file and the tensor, never crash).
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "util/mapped_file.h"
#include "io/safetensors_writer.h"

namespace qvl {
namespace {

using test::expect_error;
using test::TempDir;
using test::write_bytes;
namespace fs = std::filesystem;

const std::string kFixture = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl/model.safetensors";

// A file with a hand-written header: 8-byte length (or `len_override`), the
// header text, then `data_bytes` zero-filled bytes.
std::string raw_file(const std::string& header, size_t data_bytes, uint64_t len_override = UINT64_MAX) {
  uint64_t len = len_override == UINT64_MAX ? header.size() : len_override;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\0');
}

// One valid tensor "a" (F32 [2, 3], 24 bytes) plus `extra` entries.
std::string header_with(const std::string& extra) {
  return R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})" + extra + "}";
}

std::vector<uint8_t> bytes_of(const void* p, size_t n) {
  auto* b = static_cast<const uint8_t*>(p);
  return {b, b + n};
}

TEST(SafeTensors, FixtureCheckpoint) {
  SafeTensors st = SafeTensors::open(kFixture);
  EXPECT_EQ(st.tensors().size(), 145u);
  for (const auto& [name, v] : st.tensors()) {
    EXPECT_EQ(v.dtype, DType::BF16) << name;
    EXPECT_EQ(v.nbytes, static_cast<size_t>(v.numel()) * 2) << name;
    EXPECT_EQ(*v.file, kFixture);
  }
  const TensorView& embed = st.get("model.language_model.embed_tokens.weight");
  EXPECT_EQ(embed.shape, (std::vector<int64_t>{151936, 64}));
  const TensorView& patch = st.get("model.visual.patch_embed.proj.weight");
  EXPECT_EQ(patch.shape, (std::vector<int64_t>{96, 3, 2, 16, 16}));
  EXPECT_EQ(st.find("lm_head.weight"), nullptr);  // tied embeddings
  EXPECT_EQ(st.total_bytes(), fs::file_size(kFixture));
  EXPECT_EQ(st.metadata().at("format"), "pt");

  // Zero copy: the view is the file's bytes at its offset.
  std::ifstream in(kFixture, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(patch.file_offset));
  std::vector<char> expect(64);
  in.read(expect.data(), 64);
  EXPECT_EQ(std::memcmp(expect.data(), patch.data, 64), 0);

  // A folder opens its model.safetensors.
  SafeTensors by_dir = SafeTensors::open(std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl");
  EXPECT_EQ(by_dir.tensors().size(), 145u);
}

TEST(SafeTensors, RoundTripEveryDtype) {
  TempDir dir;
  std::vector<float> f32 = {1.5f, -2.25f, 3.0f, 0.0f, 1e-3f, -7.0f};
  std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x4040, 0x0000};  // 1, -2, 3, 0
  std::vector<uint16_t> f16 = {0x3c00, 0xc000};                    // 1, -2
  std::vector<int64_t> i64 = {-1, 1ll << 40, 7};
  std::vector<int32_t> i32 = {5, -6};
  std::vector<TensorInfo> infos = {{"f32", DType::F32, {2, 3}},     {"bf16", DType::BF16, {4}},
                                   {"f16", DType::F16, {1, 2}},     {"i64", DType::I64, {3}},
                                   {"i32", DType::I32, {2, 1, 1}},  {"scalar", DType::F32, {}},
                                   {"empty", DType::F32, {0, 5}},   {"f8", DType::F8_E4M3, {3}}};
  float scalar = 42.0f;
  const std::vector<uint8_t> f8 = {0x38, 0xb8, 0x7e};  // 1, -1, 448 (FP8 checkpoints' weights)
  std::vector<std::vector<uint8_t>> data = {bytes_of(f32.data(), 24), bytes_of(bf16.data(), 8), bytes_of(f16.data(), 4),
                                            bytes_of(i64.data(), 24), bytes_of(i32.data(), 8),  bytes_of(&scalar, 4),
                                            {},                         f8};
  write_safetensors(dir / "t.safetensors", infos, data);
  EXPECT_FALSE(fs::exists(dir / "t.safetensors.tmp"));

  SafeTensors st = SafeTensors::open(dir / "t.safetensors");
  ASSERT_EQ(st.tensors().size(), infos.size());
  for (size_t i = 0; i < infos.size(); ++i) {
    const TensorView& v = st.get(infos[i].name);
    EXPECT_EQ(v.dtype, infos[i].dtype) << infos[i].name;
    EXPECT_EQ(v.shape, infos[i].shape) << infos[i].name;
    ASSERT_EQ(v.nbytes, data[i].size()) << infos[i].name;
    if (v.nbytes) {
      EXPECT_EQ(std::memcmp(v.data, data[i].data(), v.nbytes), 0) << infos[i].name;
    }
  }
  EXPECT_EQ(st.get("scalar").numel(), 1);
  EXPECT_EQ(st.get("empty").numel(), 0);
  // The writer pads the header so the data section is 8-byte aligned.
  EXPECT_EQ(st.get("f32").file_offset % 8, 0u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(dtype_from_name("BF16"), DType::BF16);
  EXPECT_FALSE(dtype_from_name("F64").has_value());
  EXPECT_EQ(dtype_from_name("F8_E4M3"), DType::F8_E4M3);
  EXPECT_EQ(dtype_size(DType::F8_E4M3), 1u);
  EXPECT_FALSE(dtype_from_name("F8_E5M2").has_value());
}

TEST(SafeTensors, StreamedWriteAcrossChunks) {
  TempDir dir;
  // Chunks far smaller than the tensors, so fills split tensors and buffers.
  // Mixed element sizes (2, 8, 4) so a chunk's end can fall inside an element.
  std::vector<TensorInfo> infos = {{"x", DType::BF16, {1001}}, {"y", DType::I64, {37}}, {"z", DType::I32, {5000}}};
  WriteOptions opt;
  opt.chunk_bytes = 4100;
  auto value = [](size_t t, size_t k) { return static_cast<int64_t>(t * 100000 + k); };
  write_safetensors(dir / "s.safetensors", infos, [&](size_t t, size_t off, std::span<uint8_t> out) {
    const size_t es = dtype_size(infos[t].dtype);
    ASSERT_EQ(off % es, 0u);
    ASSERT_EQ(out.size() % es, 0u);
    for (size_t k = 0; k < out.size() / es; ++k) {
      int64_t v = value(t, off / es + k);
      std::memcpy(out.data() + es * k, &v, es);  // little-endian: the low bytes
    }
  }, opt);
  SafeTensors st = SafeTensors::open(dir / "s.safetensors");
  for (size_t t = 0; t < infos.size(); ++t) {
    const TensorView& v = st.get(infos[t].name);
    const size_t es = dtype_size(v.dtype);
    for (int64_t k = 0; k < v.numel(); ++k) {
      int64_t got = 0;
      std::memcpy(&got, v.data + es * k, es);
      int64_t want = value(t, k) & (es == 8 ? -1 : (int64_t{1} << (8 * es)) - 1);
      ASSERT_EQ(got, want) << infos[t].name << " " << k;
    }
  }
}

TEST(SafeTensors, FailedWriteLeavesNothing) {
  TempDir dir;
  std::vector<TensorInfo> infos = {{"x", DType::F32, {4}}};
  expect_error([&] { write_safetensors(dir / "w.safetensors", infos, std::vector<std::vector<uint8_t>>{{1, 2}}); },
               {"'x'", "16"});
  EXPECT_FALSE(fs::exists(dir / "w.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "w.safetensors.tmp"));
}

// Writes two shards of f32 tensors and an index mapping them.
void write_sharded(const TempDir& dir, const nlohmann::json& weight_map) {
  std::vector<float> v(6, 1.0f);
  write_safetensors(dir / "model-00001-of-00002.safetensors", {{"a", DType::F32, {6}}, {"b", DType::F32, {2, 3}}},
                    {bytes_of(v.data(), 24), bytes_of(v.data(), 24)});
  write_safetensors(dir / "model-00002-of-00002.safetensors", {{"c", DType::F32, {3}}, {"d", DType::F32, {1}}},
                    {bytes_of(v.data(), 12), bytes_of(v.data(), 4)});
  nlohmann::json index = {{"metadata", {{"total_size", 64}}}, {"weight_map", weight_map}};
  write_bytes(dir / "model.safetensors.index.json", index.dump());
}

const nlohmann::json kGoodMap = {{"a", "model-00001-of-00002.safetensors"},
                                 {"b", "model-00001-of-00002.safetensors"},
                                 {"c", "model-00002-of-00002.safetensors"},
                                 {"d", "model-00002-of-00002.safetensors"}};

TEST(SafeTensors, Sharded) {
  TempDir dir;
  write_sharded(dir, kGoodMap);
  for (const std::string& path : {dir.path(), dir / "model.safetensors.index.json"}) {
    SafeTensors st = SafeTensors::open(path);
    EXPECT_EQ(st.tensors().size(), 4u);
    EXPECT_EQ(st.files().size(), 2u);
    EXPECT_EQ(*st.get("c").file, dir / "model-00002-of-00002.safetensors");
    EXPECT_EQ(st.total_bytes(), fs::file_size(dir / "model-00001-of-00002.safetensors") +
                                    fs::file_size(dir / "model-00002-of-00002.safetensors"));
  }
  // The index wins over a model.safetensors beside it.
  write_safetensors(dir / "model.safetensors", {{"zzz", DType::F32, {1}}}, {{0, 0, 0, 0}});
  EXPECT_EQ(SafeTensors::open(dir.path()).find("zzz"), nullptr);
}

TEST(SafeTensors, ShardErrors) {
  {
    TempDir dir;
    nlohmann::json map = kGoodMap;
    map["e"] = "model-00003-of-00003.safetensors";
    write_sharded(dir, map);
    expect_error([&] { SafeTensors::open(dir.path()); },
                 {"model.safetensors.index.json", "model-00003-of-00003.safetensors", "'e'", "missing"});
  }
  {
    TempDir dir;
    nlohmann::json map = kGoodMap;
    map["zz"] = "model-00002-of-00002.safetensors";  // not in that shard
    write_sharded(dir, map);
    expect_error([&] { SafeTensors::open(dir.path()); }, {"index.json", "'zz'", "model-00002-of-00002.safetensors", "does not contain"});
  }
  {
    TempDir dir;
    nlohmann::json map = kGoodMap;
    map["c"] = "model-00001-of-00002.safetensors";  // c lives in shard 2
    write_sharded(dir, map);
    expect_error([&] { SafeTensors::open(dir.path()); }, {"'c'", "model-00001-of-00002", "but is in", "model-00002-of-00002"});
  }
  {
    TempDir dir;
    write_sharded(dir, kGoodMap);
    std::vector<float> v(6, 0.0f);
    // The same name in two shards.
    write_safetensors(dir / "model-00002-of-00002.safetensors",
                      {{"c", DType::F32, {3}}, {"d", DType::F32, {1}}, {"a", DType::F32, {1}}},
                      {bytes_of(v.data(), 12), bytes_of(v.data(), 4), bytes_of(v.data(), 4)});
    expect_error([&] { SafeTensors::open(dir.path()); }, {"'a'", "also in", "model-00001-of-00002.safetensors"});
  }
  {
    TempDir dir;
    nlohmann::json map = kGoodMap;
    map["a"] = "../elsewhere.safetensors";
    write_sharded(dir, map);
    expect_error([&] { SafeTensors::open(dir.path()); }, {"index.json", "'a'", "../elsewhere.safetensors"});
  }
  {
    TempDir dir;
    write_bytes(dir / "model.safetensors.index.json", R"({"weight_map": {"a": "x.safetensors",)");
    expect_error([&] { SafeTensors::open(dir.path()); }, {"index.json", "not valid JSON"});
    write_bytes(dir / "model.safetensors.index.json", R"({"metadata": {}})");
    expect_error([&] { SafeTensors::open(dir.path()); }, {"index.json", "weight_map"});
    write_bytes(dir / "model.safetensors.index.json", R"({"weight_map": {"a": 3}})");
    expect_error([&] { SafeTensors::open(dir.path()); }, {"index.json", "'a'"});
  }
  {
    TempDir dir;
    expect_error([&] { SafeTensors::open(dir.path()); }, {dir.path(), "no model.safetensors"});
  }
}

// Each corrupt file: the file name, and what the message must name.
struct Corrupt {
  const char* what;
  std::string bytes;
  std::vector<std::string> needles;
};

TEST(SafeTensors, CorruptFilesFailWithOneLine) {
  const std::vector<Corrupt> cases = {
      {"empty", "", {"truncated", "0 bytes"}},
      {"short", std::string(5, '\x01'), {"truncated", "5 bytes"}},
      {"length over cap", raw_file("{}", 0, 1ull << 40), {"header length 1099511627776", "limit"}},
      {"length past end", raw_file(header_with(""), 24, 5000), {"header length 5000", "past the end"}},
      {"length huge", raw_file("{}", 0, UINT64_MAX - 1), {"header length"}},
      {"zero length", raw_file("", 0), {"not valid JSON"}},
      {"bad json", raw_file(R"({"a":{"dtype":"F32",)", 0), {"not valid JSON", "file offset"}},
      {"not object", raw_file("[1,2]", 0), {"not a JSON object"}},
      {"entry not object", raw_file(header_with(R"(,"b":7)"), 24), {"'b'", "not a JSON object"}},
      {"no dtype", raw_file(header_with(R"(,"b":{"shape":[1],"data_offsets":[24,28]})"), 28), {"'b'", "dtype"}},
      {"dtype F64", raw_file(header_with(R"(,"b":{"dtype":"F64","shape":[1],"data_offsets":[24,32]})"), 32),
       {"'b'", "F64", "not support"}},
      {"dtype F8_E5M2", raw_file(header_with(R"(,"b":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[24,25]})"), 25),
       {"'b'", "F8_E5M2", "not support"}},
      {"negative dim", raw_file(header_with(R"(,"b":{"dtype":"F32","shape":[2,-3],"data_offsets":[24,48]})"), 48),
       {"'b'", "dimension 1", "negative"}},
      {"float dim", raw_file(header_with(R"(,"b":{"dtype":"F32","shape":[2.5],"data_offsets":[24,34]})"), 34),
       {"'b'", "not an integer"}},
      {"string dim", raw_file(header_with(R"(,"b":{"dtype":"F32","shape":["4"],"data_offsets":[24,40]})"), 40),
       {"'b'", "not an integer"}},
      {"shape overflow",
       raw_file(header_with(R"(,"b":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[24,28]})"), 28),
       {"'b'", "overflows"}},
      {"no offsets", raw_file(header_with(R"(,"b":{"dtype":"F32","shape":[1]})"), 28), {"'b'", "data_offsets"}},
      {"offsets reversed", raw_file(header_with(R"(,"b":{"dtype":"F32","shape":[0],"data_offsets":[28,24]})"), 28),
       {"'b'", "[28, 24]"}},
      {"negative offset", raw_file(header_with(R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]})"), 28),
       {"'b'", "negative"}},
      {"past data", raw_file(header_with(R"(,"b":{"dtype":"F32","shape":[4],"data_offsets":[24,40]})"), 30),
       {"'b'", "past the data section", "truncated"}},
      {"size mismatch", raw_file(header_with(R"(,"b":{"dtype":"BF16","shape":[3],"data_offsets":[24,32]})"), 32),
       {"'b'", "[3]", "BF16", "needs 6 bytes", "span 8", "file offset"}},
      {"overlap", raw_file(header_with(R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]})"), 24),
       {"'a'", "'b'", "overlap", "file offset"}},
      {"duplicate", raw_file(header_with(R"(,"a":{"dtype":"F32","shape":[1],"data_offsets":[24,28]})"), 28),
       {"'a'", "twice"}},
      {"bad metadata", raw_file(header_with(R"(,"__metadata__":[1])"), 24), {"__metadata__"}},
      {"invalid utf8", raw_file("{\"\xff\xfe\":{}}", 0), {"not valid JSON"}},
  };
  TempDir dir;
  int i = 0;
  for (const Corrupt& c : cases) {
    SCOPED_TRACE(c.what);
    std::string path = dir / ("corrupt" + std::to_string(i++) + ".safetensors");
    write_bytes(path, c.bytes);
    std::vector<std::string> needles = c.needles;
    needles.push_back(path);
    expect_error([&] { SafeTensors::open(path); }, needles);
  }
}

// Random byte edits and cuts of a valid file: each open either succeeds with
// views inside the file or throws qvl::Error; nothing else (run under ASan too).
TEST(SafeTensors, MutatedFilesNeverCrash) {
  TempDir dir;
  std::vector<float> v(12, 0.5f);
  write_safetensors(dir / "good.safetensors", {{"w", DType::F32, {3, 4}}, {"b", DType::BF16, {6}}, {"i", DType::I64, {1}}},
                    {bytes_of(v.data(), 48), bytes_of(v.data(), 12), bytes_of(v.data(), 8)});
  const std::string good = read_file(dir / "good.safetensors");
  uint64_t state = 12345;
  auto next = [&state] {  // xorshift64
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  const std::string alphabet = "{}[]\",:0123456789-eE.\" FBI";
  int opened = 0, rejected = 0;
  for (int round = 0; round < 400; ++round) {
    std::string bytes = good;
    int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t at = next() % bytes.size();
      bytes[at] = next() % 2 ? alphabet[next() % alphabet.size()] : static_cast<char>(next());
    }
    if (next() % 4 == 0) bytes.resize(next() % bytes.size());
    std::string path = dir / "m.safetensors";
    write_bytes(path, bytes);
    try {
      SafeTensors st = SafeTensors::open(path);
      for (const auto& [name, t] : st.tensors()) {
        ASSERT_LE(t.file_offset + t.nbytes, bytes.size()) << name;
        ASSERT_EQ(t.nbytes, static_cast<size_t>(t.numel()) * dtype_size(t.dtype)) << name;
      }
      ++opened;
    } catch (const Error& e) {
      ASSERT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 100);
  EXPECT_GT(opened, 0);
}

TEST(SafeTensors, TruncatedFixtureNamesTensorAndOffset) {
  TempDir dir;
  std::string path = dir / "cut.safetensors";
  fs::copy_file(kFixture, path);
  fs::resize_file(path, fs::file_size(kFixture) - 1000);
  std::string msg = expect_error([&] { SafeTensors::open(path); }, {path, "tensor '", "past the data section", "file offset"});
  EXPECT_NE(msg.find(std::to_string(fs::file_size(path))), std::string::npos) << msg;
  // Cut inside the header.
  fs::resize_file(path, 100);
  expect_error([&] { SafeTensors::open(path); }, {path, "past the end of the file"});
}

TEST(SafeTensors, MissingFileAndTensor) {
  expect_error([] { SafeTensors::open("/nonexistent/x.safetensors"); }, {"/nonexistent/x.safetensors"});
  SafeTensors st = SafeTensors::open(kFixture);
  expect_error([&] { st.get("model.nope.weight"); }, {"'model.nope.weight'", kFixture});
}

}  // namespace
}  // namespace qvl
