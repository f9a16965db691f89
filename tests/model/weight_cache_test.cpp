// The weight cache (model/weight_cache.h): a model loaded from it answers bit
// for bit as one quantized at load; a corrupted, truncated or foreign file is
// refused with a warning and rebuilt; a changed checkpoint gets a new key;
// files appear whole or not at all; the folder stays bounded; list() shows
// them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "model/weight_cache.h"
#include "prompt_runner.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');  // parameterised tests: "Name/0"
    path = fs::temp_directory_path() / ("qvl_weight_cache_test_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

struct Loaded {
  std::unique_ptr<Model> model;
  std::string log;
};

Loaded load(const std::string& dir, WeightFormat format, const std::optional<WeightCacheOptions>& cache) {
  std::ostringstream log;
  ModelLoadOptions o;
  o.format = format;
  o.max_batch = 64;
  o.weight_cache = cache;
  o.log = &log;
  Loaded l{Model::load(dir, o, golden::pool()), ""};
  l.log = log.str();
  return l;
}

std::vector<const WeightMatrix*> all_matrices(const ModelWeights& w) {
  std::vector<const WeightMatrix*> out{&w.vision.patch_embed.w, &w.vision.merger.fc1.w, &w.vision.merger.fc2.w,
                                       &w.text.lm_head};
  for (const auto& b : w.vision.blocks)
    for (const Linear* l : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) out.push_back(&l->w);
  for (const auto& m : w.vision.deepstack) out.insert(out.end(), {&m.fc1.w, &m.fc2.w});
  for (const auto& l : w.text.layers)
    for (const WeightMatrix* m : l.matrices()) out.push_back(m);
  return out;
}

void expect_same_matrices(const Model& a, const Model& b) {
  const auto ma = all_matrices(a.weights()), mb = all_matrices(b.weights());
  ASSERT_EQ(ma.size(), mb.size());
  for (size_t i = 0; i < ma.size(); ++i) {
    ASSERT_EQ(ma[i]->format(), mb[i]->format()) << "matrix " << i;
    ASSERT_EQ(ma[i]->rows(), mb[i]->rows()) << "matrix " << i;
    ASSERT_EQ(ma[i]->bytes(), mb[i]->bytes()) << "matrix " << i;
    ASSERT_EQ(std::memcmp(ma[i]->data(), mb[i]->data(), ma[i]->bytes()), 0) << "matrix " << i << " differs";
  }
}

std::string only_cache_file(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? "" : files[0];
}

class WeightCacheRoundTrip : public ::testing::TestWithParam<std::tuple<WeightFormat, bool>> {};

// Written by the first load, mapped by the second: the same bytes for every
// matrix and the same greedy tokens and logits, bit for bit, as a model
// quantized at load without the cache.
TEST_P(WeightCacheRoundTrip, CachedModelAnswersBitForBitAsQuantizedAtLoad) {
  const auto [format, moe] = GetParam();
  const std::string dir = moe ? golden::moe_model_dir() : golden::model_dir();
  TempDir tmp;
  WeightCacheOptions c;
  c.dir = tmp.path.string();
  Loaded first = load(dir, format, c);
  EXPECT_EQ(first.model->weight_cache_use().outcome, WeightCacheUse::Outcome::Written) << first.log;
  EXPECT_TRUE(fs::exists(first.model->weight_cache_use().path));
  Loaded cached = load(dir, format, c);
  EXPECT_EQ(cached.model->weight_cache_use().outcome, WeightCacheUse::Outcome::Loaded) << cached.log;
  EXPECT_EQ(cached.log, "");
  Loaded plain = load(dir, format, std::nullopt);
  EXPECT_EQ(plain.model->weight_cache_use().outcome, WeightCacheUse::Outcome::Off);
  expect_same_matrices(*cached.model, *plain.model);

  const nlohmann::json& p = golden::manifest()["prompts"][0];
  const std::string golden_dir = moe ? "golden-moe" : "golden";
  const golden::PromptRun a = golden::run_prompt(*cached.model, p, 8, false, false, KvType::F32, golden_dir);
  const golden::PromptRun b = golden::run_prompt(*plain.model, p, 8, false, false, KvType::F32, golden_dir);
  EXPECT_EQ(a.generated, b.generated);
  ASSERT_EQ(a.logits_last.size(), b.logits_last.size());
  EXPECT_EQ(std::memcmp(a.logits_last.data(), b.logits_last.data(), a.logits_last.size() * 4), 0);
}

INSTANTIATE_TEST_SUITE_P(Formats, WeightCacheRoundTrip,
                         ::testing::Values(std::make_tuple(WeightFormat::Q4, false),
                                           std::make_tuple(WeightFormat::Q8, false),
                                           std::make_tuple(WeightFormat::Q8, true)));

// Damages the cache file with `damage`, then loads: a warning naming the
// file and `reason`, a rebuild (the file valid again) and the same weights.
void expect_rejected_and_rebuilt(const std::function<void(const std::string&)>& damage, const std::string& reason) {
  TempDir tmp;
  WeightCacheOptions c;
  c.dir = tmp.path.string();
  Loaded first = load(golden::model_dir(), WeightFormat::Q4, c);
  const std::string path = first.model->weight_cache_use().path;
  damage(path);
  Loaded again = load(golden::model_dir(), WeightFormat::Q4, c);
  EXPECT_NE(again.log.find("warning: ignoring weight cache file " + path), std::string::npos) << again.log;
  EXPECT_NE(again.log.find(reason), std::string::npos) << again.log;
  EXPECT_EQ(again.model->weight_cache_use().outcome, WeightCacheUse::Outcome::Written);
  expect_same_matrices(*again.model, *first.model);
  Loaded third = load(golden::model_dir(), WeightFormat::Q4, c);
  EXPECT_EQ(third.model->weight_cache_use().outcome, WeightCacheUse::Outcome::Loaded) << third.log;
}

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char b = 0;
  f.read(&b, 1);
  b ^= 0x10;
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(&b, 1);
}

TEST(WeightCache, CorruptedDataIsRejectedAndRebuilt) {
  expect_rejected_and_rebuilt([](const std::string& p) { flip_byte(p, fs::file_size(p) / 2); },
                              "data checksum mismatch");
}

TEST(WeightCache, CorruptedHeaderIsRejectedAndRebuilt) {
  expect_rejected_and_rebuilt([](const std::string& p) { flip_byte(p, 100); }, "header checksum mismatch");
}

TEST(WeightCache, CorruptedTableIsRejectedAndRebuilt) {
  expect_rejected_and_rebuilt([](const std::string& p) { flip_byte(p, fs::file_size(p) - 20); },
                              "table checksum mismatch");
}

TEST(WeightCache, TruncatedFileIsRejectedAndRebuilt) {
  expect_rejected_and_rebuilt([](const std::string& p) { fs::resize_file(p, fs::file_size(p) - 4096); }, "truncated");
  expect_rejected_and_rebuilt([](const std::string& p) { fs::resize_file(p, 50); }, "shorter than its header");
  expect_rejected_and_rebuilt([](const std::string& p) { fs::resize_file(p, 0); }, "shorter than its header");
}

// A file under the right name whose header holds another key (made for
// another checkpoint or format) is refused.
TEST(WeightCache, FileWithAnotherKeyIsRejected) {
  TempDir tmp;
  WeightCacheOptions c;
  c.dir = tmp.path.string();
  Loaded q8 = load(golden::model_dir(), WeightFormat::Q8, c);
  Loaded q4 = load(golden::model_dir(), WeightFormat::Q4, c);
  fs::copy_file(q8.model->weight_cache_use().path, q4.model->weight_cache_use().path,
                fs::copy_options::overwrite_existing);
  Loaded again = load(golden::model_dir(), WeightFormat::Q4, c);
  EXPECT_NE(again.log.find("is not the checkpoint's"), std::string::npos) << again.log;
  EXPECT_EQ(again.model->weight_cache_use().outcome, WeightCacheUse::Outcome::Written);
  expect_same_matrices(*again.model, *q4.model);
}

// The key changes with the format, config.json and the checkpoint's bytes,
// even when a rewrite keeps the size and the modification time.
TEST(WeightCache, KeyChangesWhenTheCheckpointIsRewritten) {
  TempDir tmp;
  const fs::path copy = tmp.path / "model";
  fs::copy(golden::model_dir(), copy, fs::copy_options::recursive);
  auto key = [&](WeightFormat f) {
    const ModelFolder folder = ModelFolder::open(copy.string());
    return weight_cache_key(folder, SafeTensors::open(folder.weights_path), f);
  };
  const std::string k4 = key(WeightFormat::Q4);
  EXPECT_EQ(k4.size(), 64u);
  EXPECT_EQ(key(WeightFormat::Q4), k4);
  EXPECT_NE(key(WeightFormat::Q8), k4);

  const fs::path st = copy / "model.safetensors";
  const auto mtime = fs::last_write_time(st);
  // File times tick with the kernel's coarse clock (a few ms): a rewrite
  // within the same tick as the copy would keep ctime (docs/weight-cache.md).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    // Same size, same header, one weight changed; mtime put back as it was.
    std::fstream f(st, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(st) - 2));
    f.write("\x12\x34", 2);
  }
  fs::last_write_time(st, mtime);
  EXPECT_NE(key(WeightFormat::Q4), k4);

  const std::string k = key(WeightFormat::Q4);
  std::ofstream(copy / "config.json", std::ios::app) << "\n";
  EXPECT_NE(key(WeightFormat::Q4), k);
}

// Nothing appears under the final name before commit(); an abandoned writer
// leaves nothing behind; a reader mapping the old file keeps reading it
// after a new one replaces it.
TEST(WeightCache, WritesAreAtomic) {
  TempDir tmp;
  const std::string key(64, 'a');
  const std::string path = (tmp.path / (key + ".qvlw")).string();
  std::vector<uint16_t> bf16(64 * 96, 0x3f80);  // 1.0
  const WeightMatrix m = WeightMatrix::from_bf16(bf16.data(), 64, 96, WeightFormat::Q8);
  {
    WeightCacheWriter w(path, key, WeightFormat::Q8, "test");
    w.add("m", m);
    EXPECT_FALSE(fs::exists(path));
    EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path), fs::directory_iterator()), 1);  // the temp file
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path), fs::directory_iterator()), 0);

  WeightCacheWriter w(path, key, WeightFormat::Q8, "first");
  w.add("m", m);
  w.commit();
  EXPECT_EQ(only_cache_file(tmp.path), path);
  WeightCacheOptions c;
  c.dir = tmp.path.string();
  std::ostringstream log;
  std::optional<MatrixTable> old = WeightCache(c).open(key, WeightFormat::Q8, nullptr, log);
  ASSERT_TRUE(old) << log.str();
  const WeightMatrix& held = old->at("m");
  ASSERT_EQ(std::memcmp(held.data(), m.data(), m.bytes()), 0);

  std::vector<uint16_t> other(64 * 96, 0xbf80);  // -1.0
  const WeightMatrix m2 = WeightMatrix::from_bf16(other.data(), 64, 96, WeightFormat::Q8);
  WeightCacheWriter w2(path, key, WeightFormat::Q8, "second");
  w2.add("m", m2);
  w2.commit();
  EXPECT_EQ(std::memcmp(held.data(), m.data(), m.bytes()), 0);  // the old mapping is intact
  std::optional<MatrixTable> now = WeightCache(c).open(key, WeightFormat::Q8, nullptr, log);
  ASSERT_TRUE(now) << log.str();
  EXPECT_EQ(std::memcmp(now->at("m").data(), m2.data(), m2.bytes()), 0);
  EXPECT_EQ(only_cache_file(tmp.path), path);
}

// Past max_bytes the least recently used files go; the one just written
// stays even when alone it exceeds the bound; list() shows what is there.
TEST(WeightCache, BoundedAndListed) {
  TempDir tmp;
  std::vector<uint16_t> bf16(256 * 256, 0x3f80);
  const WeightMatrix m = WeightMatrix::from_bf16(bf16.data(), 256, 256, WeightFormat::Q8);
  WeightCacheOptions c;
  c.dir = tmp.path.string();
  c.max_bytes = 2 * WeightMatrix::storage_bytes(WeightFormat::Q8, 256, 256) + 8192;  // two files
  WeightCache cache(c);
  const std::string a(64, 'a'), b(64, 'b'), d(64, 'd');
  const auto store = [&](const std::string& key, const std::string& source) {
    cache.store(key, WeightFormat::Q8, source, MatrixTable{{"m", m}});
  };
  store(a, "model-a");
  fs::last_write_time(cache.path_for(a), fs::file_time_type::clock::now() - std::chrono::hours(2));
  store(b, "model-b");
  fs::last_write_time(cache.path_for(b), fs::file_time_type::clock::now() - std::chrono::hours(1));
  std::ostringstream log;
  ASSERT_TRUE(cache.open(a, WeightFormat::Q8, nullptr, log));  // a used: b is now the oldest
  store(d, "model-d");
  EXPECT_TRUE(fs::exists(cache.path_for(a)));
  EXPECT_FALSE(fs::exists(cache.path_for(b)));
  EXPECT_TRUE(fs::exists(cache.path_for(d)));

  flip_byte(cache.path_for(a), 20);
  fs::last_write_time(cache.path_for(a), fs::file_time_type::clock::now() - std::chrono::hours(1));
  const std::vector<WeightCacheFile> files = cache.list();
  ASSERT_EQ(files.size(), 2u);
  const WeightCacheFile& newest = files[0];
  EXPECT_EQ(newest.path, cache.path_for(d));
  EXPECT_TRUE(newest.valid);
  EXPECT_EQ(newest.format, "q8");
  EXPECT_EQ(newest.source, "model-d");
  EXPECT_EQ(newest.key, d);
  EXPECT_EQ(newest.matrices, 1u);
  EXPECT_EQ(newest.bytes, fs::file_size(cache.path_for(d)));
  EXPECT_FALSE(files[1].valid);
  EXPECT_NE(files[1].problem.find("header checksum mismatch"), std::string::npos) << files[1].problem;

  c.max_bytes = 1;
  WeightCache(c).evict(cache.path_for(d));
  EXPECT_FALSE(fs::exists(cache.path_for(a)));
  EXPECT_TRUE(fs::exists(cache.path_for(d)));
}

}  // namespace
}  // namespace qvl
