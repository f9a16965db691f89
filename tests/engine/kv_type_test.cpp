// The KV cache element type an engine uses when none is asked for: exact f32
// beside exact weights, f16 beside quantized ones; an explicit choice wins.
#include <gtest/gtest.h>

#include "engine/engine.h"

namespace qvl {
namespace {

TEST(EngineKvType, DefaultFollowsTheWeightFormat) {
  EngineParams p;
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16}) {
    p.weights = f;
    EXPECT_EQ(p.resolved_kv_type(), KvType::F32) << weight_format_name(f);
  }
  for (WeightFormat f : {WeightFormat::Q8, WeightFormat::Q4}) {
    p.weights = f;
    EXPECT_EQ(p.resolved_kv_type(), KvType::F16) << weight_format_name(f);
  }
  p.kv_type = KvType::F32;
  EXPECT_EQ(p.resolved_kv_type(), KvType::F32);
  p.weights = WeightFormat::BF16;
  p.kv_type = KvType::F16;
  EXPECT_EQ(p.resolved_kv_type(), KvType::F16);
}

}  // namespace
}  // namespace qvl
