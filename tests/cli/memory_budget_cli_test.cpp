// `qvl run --memory-budget`: the KV caches of --ctx-size are reserved from the
// budget when the model loads, and an image that cannot fit is refused from
// its header, before its pixels are allocated: each a one-line error and
// exit code 1, never an out-of-memory kill.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "run_qvl.h"

namespace qvl::test {
namespace {

const std::string kFixtures = QVL_FIXTURES_DIR;
const std::string kImage = kFixtures + "/golden/images/large_800x600.png";  // 1.44 MB of pixels decoded
// The tiny model's KV caches at --ctx-size 8192 in f32: 8192 x 4 layers x K and V x 64 values x 4 bytes.
constexpr uint64_t kKvBytes = uint64_t{8192} * 4 * 2 * 64 * 4;

std::vector<std::string> run_args(uint64_t budget, std::vector<std::string> more) {
  std::vector<std::string> a = {"run",         "--model", kFixtures + "/tiny-qwen3vl", "--threads", "1",
                                "--kv-type",   "f32",     "--max-tokens",               "2",         "--prompt",
                                "What is it?", "--memory-budget", std::to_string(budget)};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(MemoryBudgetCli, KvCachesOverTheBudgetAreRefusedAtLoad) {
  const QvlResult r = run_qvl(run_args(8 << 20, {}));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "qvl run: the KV caches of --ctx-size 8192 (f32) need 16777216 bytes (16 MiB), over the memory "
                   "budget of 8388608 bytes (--memory-budget); lower --ctx-size, use --kv-type f16, or raise "
                   "--memory-budget\n");
  // The same budget holds a smaller context.
  const QvlResult small = run_qvl(run_args(8 << 20, {"--ctx-size", "1024"}));
  EXPECT_EQ(small.code, 0) << small.err;
}

// run decodes its media before it loads the model (a bad file fails at once), so an image over the
// whole budget is refused from its header, and one that fits but leaves no room for the KV caches
// fails the load, naming both.
TEST(MemoryBudgetCli, AnImageOverTheBudgetIsRefusedFromItsHeader) {
  const QvlResult r = run_qvl(run_args(1 << 20, {"--image", kImage}));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, "qvl run: image " + kImage + ": decoding needs 1444800 bytes, over the image memory budget of "
                   "1048576 bytes (1 MiB: what the memory budget leaves beside the KV caches); send a smaller one, "
                   "or raise --memory-budget\n");
  const QvlResult beside = run_qvl(run_args(kKvBytes + (1 << 20), {"--image", kImage}));
  EXPECT_EQ(beside.code, 1) << beside.err;
  EXPECT_EQ(lines(beside.err), 1) << beside.err;
  EXPECT_NE(beside.err.find("need 16777216 bytes (16 MiB), over the memory budget of 17825792 bytes (--memory-budget) "
                            "beside the 1440000 bytes its media hold;"),
            std::string::npos)
      << beside.err;
  // With 4 MiB for media beside the KV caches it is answered.
  const QvlResult ok = run_qvl(run_args(kKvBytes + (4 << 20), {"--image", kImage}));
  EXPECT_EQ(ok.code, 0) << ok.err;
}

}  // namespace
}  // namespace qvl::test
