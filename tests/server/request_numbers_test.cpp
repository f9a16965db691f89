// Every number of a chat request read through one path (util/json_number.h):
// out-of-range values refused naming the field, before any cast.
#include <gtest/gtest.h>

#include "server/requests/api_error.h"
#include "server/requests/chat_request.h"
#include "server/requests/json_limits.h"
#include "server/server_options.h"
#include "refusal.h"

namespace qvl {
namespace {

using test::chat_refusal;
using test::refusal;
using test::server_limits;

TEST(ChatNumbers, RangeIsCheckedBeforeAnyCast) {
  const std::string msgs = R"({"messages":[{"role":"user","content":"hi"}],)";
  for (const char* f : {R"("seed":8.9e20)", R"("seed":-8.9e20)", R"("max_tokens":1e300)", R"("max_tokens":18446744073709551615)",
                        R"("temperature":1e308)", R"("n":9.3e18)", R"("top_k":-1e300)", R"("logit_bias":{"5":1e300})",
                        R"("max_pixels":9.3e18)"}) {
    const ApiError e = chat_refusal(msgs + f + "}");
    EXPECT_EQ(e.status(), 400) << f;
  }
  EXPECT_EQ(chat_refusal(msgs + R"("seed":8.9e20})").param(), "seed");
  EXPECT_EQ(chat_refusal(msgs + R"("seed":1.5})").code(), "invalid_type");
  // Every 64-bit seed is usable, the unsigned ones included (not clamped).
  auto seed_of = [&](const std::string& v) {
    return parse_chat_request(parse_json_body(msgs + "\"seed\":" + v + "}", server_limits()), ChatLimits{})
        .generate.sampling.seed;
  };
  EXPECT_EQ(seed_of("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(seed_of("9223372036854775808"), uint64_t{1} << 63);
  EXPECT_EQ(seed_of("-1"), UINT64_MAX);
  EXPECT_EQ(seed_of("7.0"), 7u);
}

}  // namespace
}  // namespace qvl
