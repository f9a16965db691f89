// read_media_file in-process, both ways of opening (openat2 and the
// O_NOFOLLOW walk): files inside are read; symlinks, "..", absolute paths
// outside, directories, FIFOs and missing files are one refusal; and a file
// swapped for a symlink to outside while it is opened is never read.
#include "server/media/media_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "server/requests/api_error.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

class MediaFile : public ::testing::TestWithParam<BeneathOpen> {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("qvl-media-file-" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "allowed" / "sub");
    write(root_ / "allowed" / "in.bin", "inside");
    write(root_ / "allowed" / "sub" / "deep.bin", "deep");
    write(root_ / "secret.bin", "SECRET");
    fs::create_symlink(root_ / "secret.bin", root_ / "allowed" / "link.bin");
    fs::create_symlink(root_, root_ / "allowed" / "up");
    fs::create_symlink(root_ / "allowed" / "sub", root_ / "allowed" / "sublink");
    mkfifo((root_ / "allowed" / "fifo").c_str(), 0600);
  }
  void TearDown() override { fs::remove_all(root_); }
  static void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

  std::string read(const std::string& path, size_t max = 1000) {
    const auto v = read_media_file((root_ / "allowed").string(), path, max, "url", GetParam());
    return std::string(v.begin(), v.end());
  }
  int status(const std::string& path, std::string* message = nullptr, size_t max = 1000) {
    try {
      read(path, max);
    } catch (const ApiError& e) {
      if (message) *message = e.what();
      return e.status();
    }
    return 200;
  }
  fs::path root_;
};

TEST_P(MediaFile, ReadsFilesInsideOnly) {
  EXPECT_EQ(read("in.bin"), "inside");
  EXPECT_EQ(read("sub/deep.bin"), "deep");
  EXPECT_EQ(read("sub/../in.bin"), "inside");
  EXPECT_EQ(read((root_ / "allowed" / "in.bin").string()), "inside");
  std::string first, message;
  EXPECT_EQ(status("none.bin", &first), 403);
  for (const std::string& p : std::vector<std::string>{"link.bin", "up/secret.bin", "sublink/deep.bin", "../secret.bin", "sub", "fifo", ".",
                               (root_ / "secret.bin").string(), (root_ / "allowed" / ".." / "secret.bin").string()}) {
    EXPECT_EQ(status(p, &message), 403) << p;
    EXPECT_EQ(message, first) << p;  // one message for every refusal
  }
  EXPECT_EQ(status("in.bin", &message, 3), 413);
  EXPECT_NE(message.find("6 bytes, over the limit of 3 bytes"), std::string::npos) << message;
}

TEST_P(MediaFile, ASwapToASymlinkIsNeverFollowed) {
  const fs::path name = root_ / "allowed" / "race.bin";
  write(name, "inside");
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    for (int i = 0; !stop.load(); ++i) {
      const fs::path tmp = root_ / "allowed" / "tmp";
      std::error_code ec;
      fs::remove(tmp, ec);
      if (i % 2) fs::create_symlink(root_ / "secret.bin", tmp, ec);
      else write(tmp, "inside");
      fs::rename(tmp, name, ec);
    }
  });
  int escapes = 0, served = 0;
  for (int i = 0; i < 5000; ++i) {
    try {
      const std::string got = read("race.bin");
      if (got == "SECRET") ++escapes;
      else ++served;
    } catch (const ApiError&) {
    }
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(escapes, 0);
  EXPECT_GT(served, 0);
}

INSTANTIATE_TEST_SUITE_P(BothWays, MediaFile, ::testing::Values(BeneathOpen::Auto, BeneathOpen::WalkComponents),
                         [](const auto& info) { return info.param == BeneathOpen::Auto ? "openat2" : "walk"; });

}  // namespace
}  // namespace qvl
