// Hostile images against the real server: JPEG bombs in one body stay
// inside the image memory budget and get a clear 4xx, a hundred images are
// refused before any is decoded, a scan bomb is refused in moments, and a
// file swapped for a symlink under --allowed-media-dir is never served.
#include <sys/stat.h>

#include <atomic>
#include <filesystem>

#include "../image/image_bombs.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A field of /proc/<pid>/status in bytes (VmRSS, VmHWM).
uint64_t proc_status_bytes(pid_t pid, const std::string& field) {
  std::istringstream in(read_file("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;  // kB
  return 0;
}

// The server's RSS once it has settled: after /health answers, a thread
// still faults the mapped bf16 weights in (Model::prefetch_weights), which
// on a loaded machine can go on for a while and is no image's memory. Read
// until two reads 200 ms apart differ by under 1 MB (at most 10 s).
uint64_t settled_rss(pid_t pid) {
  uint64_t last = proc_status_bytes(pid, "VmRSS");
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const uint64_t now = proc_status_bytes(pid, "VmRSS");
    if (now < last + (1u << 20)) return now;
    last = now;
  }
  return last;
}

// How far the server's peak RSS may rise above its resting RSS for
// `budget` bytes of images. Under AddressSanitizer (make sanitize) each heap
// byte also has an eighth of a byte of shadow, its map of what may be read,
// and freed blocks wait in a quarantine before reuse: RSS counts both.
uint64_t rss_allowance(uint64_t budget) {
  return kAddressSanitizer ? budget + budget / 8 + (16u << 20) : budget;
}

std::string jpeg_uri(const std::vector<uint8_t>& jpeg) {
  return "data:image/jpeg;base64," + base64(std::string(jpeg.begin(), jpeg.end()));
}

json images_body(const std::string& uri, int count) {
  json content = json::array();
  for (int i = 0; i < count; ++i) content.push_back({{"type", "image_url"}, {"image_url", {{"url", uri}}}});
  content.push_back({{"type", "text"}, {"text", "what is this?"}});
  return {{"messages", json::array({{{"role", "user"}, {"content", content}}})}, {"max_tokens", 1}};
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr uint64_t kBudget = 128u << 20;

// The servers whose peak memory is measured keep no job store on disk: the
// sqlite store's page cache and WAL map grow the RSS by a few MB while the
// test runs, which these bounds (the image budget, nothing more) are not about.
std::vector<std::string> budget_args() {
  std::vector<std::string> args = media_budget_args(kBudget);
  args.insert(args.end(), {"--jobs-db", "memory"});
  return args;
}

// The bomb: 16 truncated JPEGs declaring 10000x10000 in a 15 KB
// body took the process to 4.8 GB (32: bad_alloc, 500). Each needs more
// than the whole budget, so the first is refused from its header.
TEST(ImageAbuse, SixteenJpegBombsInOneBodyStayInsideTheBudget) {
  ServerProcess s(budget_args());
  const uint64_t base = settled_rss(s.pid());
  auto c = s.client();
  const auto t = Clock::now();
  auto r = post_json(c, "/v1/chat/completions", images_body(jpeg_uri(qvl_test::jpeg_dimension_bomb(10000, 10000)), 16));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "image_too_large");
  EXPECT_NE(r->body.find("image memory budget"), std::string::npos) << r->body;
  EXPECT_LT(seconds_since(t), 2.0);
  const uint64_t peak = proc_status_bytes(s.pid(), "VmHWM");
  EXPECT_LT(peak, base + rss_allowance(kBudget)) << "peak " << peak << " base " << base;
  EXPECT_EQ(s.stop(), 0);
}

// Bombs that each fit (2000x2000: 12 MB of RGB) but not all together: the
// request's own images add up, so one is refused once they would pass the
// budget, and the memory never does.
TEST(ImageAbuse, ImagesThatFitAloneAddUpWithinTheBudget) {
  ServerProcess s(budget_args());
  const uint64_t base = settled_rss(s.pid());
  auto c = s.client();
  auto r = post_json(c, "/v1/chat/completions", images_body(jpeg_uri(qvl_test::jpeg_dimension_bomb(2000, 2000)), 16));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_NE(r->body.find("earlier images"), std::string::npos) << r->body;
  EXPECT_LT(proc_status_bytes(s.pid(), "VmHWM"), base + rss_allowance(kBudget));
  // Everything was given back: a good image is served right after.
  auto ok = post_json(c, "/v1/chat/completions", chat_body("hi", png_data_uri(), 1));
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(s.stop(), 0);
}

// 100 images that would each take a second to decode: refused by count
// before the first is looked at.
TEST(ImageAbuse, TooManyImagesIsAnsweredBeforeAnyDecode) {
  ServerProcess s;
  settled_rss(s.pid());
  const uint64_t peak_before = proc_status_bytes(s.pid(), "VmHWM");  // loading peaks above the steady RSS
  auto c = s.client();
  const auto t = Clock::now();
  auto r = post_json(c, "/v1/chat/completions", images_body(jpeg_uri(qvl_test::jpeg_dimension_bomb(8000, 8000)), 100));
  ASSERT_TRUE(r);
  EXPECT_LT(seconds_since(t), 1.0);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "too_many_images");
  EXPECT_LT(proc_status_bytes(s.pid(), "VmHWM"), peak_before + (16u << 20));  // no 192 MB image was allocated
  EXPECT_EQ(s.stop(), 0);
}

TEST(ImageAbuse, ProgressiveScanBombIsRefusedQuickly) {
  ServerProcess s;
  auto c = s.client();
  const auto t = Clock::now();
  auto r = post_json(c, "/v1/chat/completions", images_body(jpeg_uri(qvl_test::jpeg_scan_bomb(2048, 2048, 700)), 1));
  ASSERT_TRUE(r);
  EXPECT_LT(seconds_since(t), 2.0);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["code"], "invalid_image");
  EXPECT_NE(r->body.find("progressive scans"), std::string::npos) << r->body;
  EXPECT_EQ(s.stop(), 0);
}

// A thread keeps swapping a file inside the allowed folder between a
// non-image (answered 400) and a symlink to a real PNG outside (answered
// 403); any 200 would mean the outside file was served.
TEST(ImageAbuse, MediaFileSwappedForASymlinkIsNeverServed) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("qvl-media-race-" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "allowed");
  const fs::path outside = root / "secret.png";
  fs::copy_file(kFixtures + "/golden/images/tiny_40x36.png", outside);
  const fs::path target = root / "allowed" / "img.png";
  {
    std::ofstream(root / "allowed" / "plain.tmp") << "not an image";
  }
  fs::copy_file(root / "allowed" / "plain.tmp", target);

  ServerProcess s({"--allowed-media-dir", (root / "allowed").string()});
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    for (int i = 0; !stop.load(); ++i) {
      const fs::path tmp = root / "allowed" / ("swap" + std::to_string(i % 2));
      std::error_code ec;
      fs::remove(tmp, ec);
      if (i % 2) fs::create_symlink(outside, tmp, ec);
      else fs::copy_file(root / "allowed" / "plain.tmp", tmp, ec);
      fs::rename(tmp, target, ec);  // atomic: the name is always one or the other
    }
  });
  auto c = s.client();
  int escapes = 0, refused = 0, not_image = 0, tries = 0;
  // At least 400 tries, and on until both kinds were seen: on a loaded
  // machine the swapper may not run for a while, leaving one kind throughout.
  const auto t = Clock::now();
  for (; tries < 400 || ((refused == 0 || not_image == 0) && seconds_since(t) < 30); ++tries) {
    auto r = post_json(c, "/v1/chat/completions", chat_body("hi", "img.png", 1));
    ASSERT_TRUE(r);
    if (r->status == 200) ++escapes;
    if (r->status == 403) ++refused;
    if (r->status == 400) ++not_image;
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(escapes, 0);
  EXPECT_EQ(refused + not_image, tries);
  EXPECT_GT(refused, 0);
  EXPECT_GT(not_image, 0);
  // Missing, outside and symlinked all answer alike.
  auto missing = post_json(c, "/v1/chat/completions", chat_body("hi", "none.png", 1));
  auto above = post_json(c, "/v1/chat/completions", chat_body("hi", "../secret.png", 1));
  auto absolute = post_json(c, "/v1/chat/completions", chat_body("hi", outside.string(), 1));
  for (const auto* r : {&missing, &above, &absolute}) {
    ASSERT_TRUE(*r);
    EXPECT_EQ((*r)->status, 403);
    EXPECT_EQ(json::parse((*r)->body)["error"]["message"], json::parse(missing->body)["error"]["message"]);
  }
  EXPECT_EQ(s.stop(), 0);
  fs::remove_all(root);
}

}  // namespace
}  // namespace qvl::test
