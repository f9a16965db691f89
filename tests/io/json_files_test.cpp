// Every model JSON file goes through one parse (util/json_reader.h): a number
// outside a double or a syntax error is a qvl::Error naming the file, the
// field and the byte, never a library exception without the file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "io/model_config.h"
#include "io/safetensors.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

using test::expect_error;
using test::TempDir;
using test::write_bytes;

std::string safetensors_file(const std::string& header) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + std::string(24, '\0');
}

TEST(JsonFiles, ConfigNumbersOutsideADoubleNameFileFieldAndByte) {
  expect_error([] { parse_model_config(R"({"text_config": {"rope_theta": 1e400}})", "/m/config.json"); },
               {"/m/config.json", "text_config.rope_theta", "1e400", "byte 31"});
  expect_error([] { parse_preprocessor_config(R"({"merge_size": -1e999})", "/m/preprocessor_config.json"); },
               {"/m/preprocessor_config.json", "merge_size", "byte"});
  expect_error([] { parse_generation_config(R"({"temperature": 1e309})", "/m/generation_config.json"); },
               {"/m/generation_config.json", "temperature", "byte"});
}

TEST(JsonFiles, IntegersFromHugeFloatsAreRefusedNotCast) {
  nlohmann::json c = nlohmann::json::parse(read_file(std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl/config.json"));
  c["text_config"]["hidden_size"] = 8.9e20;
  expect_error([&] { parse_model_config(c.dump(), "/m/config.json"); },
               {"/m/config.json", "text_config.hidden_size", "out of range"});
}

TEST(JsonFiles, SafetensorsHeaderNumbersNameTheFileOffset) {
  TempDir dir;
  const std::string header = R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,1e400]}})";
  write_bytes(dir / "model.safetensors", safetensors_file(header));
  expect_error([&] { SafeTensors::open(dir / "model.safetensors"); },
               {"model.safetensors", "a.data_offsets[1]", cat("byte ", 8 + header.find("1e400"))});
  write_bytes(dir / "dup.safetensors", safetensors_file(R"({"a":{"dtype":"F32","dtype":"F16"}})"));
  expect_error([&] { SafeTensors::open(dir / "dup.safetensors"); }, {"dup.safetensors", "dtype", "twice"});
}

TEST(JsonFiles, SafetensorsIndexNumbersNameTheFile) {
  TempDir dir;
  write_bytes(dir / "model.safetensors.index.json", R"({"metadata": {"total_size": 1e400}, "weight_map": {}})");
  expect_error([&] { SafeTensors::open(dir.path()); },
               {"model.safetensors.index.json", "metadata.total_size", "outside the range", "byte 28"});
}

}  // namespace
}  // namespace qvl
