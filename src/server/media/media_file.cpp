#include "server/media/media_file.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "server/requests/api_error.h"
#include "util/error.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

// One answer for every way a path can fail to name a readable file inside
// the folder, so a client learns nothing about what exists elsewhere.
[[noreturn]] void not_allowed(const std::string& param) {
  throw ApiError(403, "path_not_allowed",
                 "the image path names no regular file inside the allowed media folder (symbolic links are not "
                 "followed)",
                 param);
}

// The path relative to the folder, lexically: an absolute path must start
// with the folder as configured or as resolved; ".." may not climb out.
fs::path relative_to_root(const std::string& root, const std::string& path) {
  const fs::path p = fs::path(path).lexically_normal();
  if (!p.is_absolute()) return p;
  std::error_code ec;
  for (const fs::path& base : {fs::absolute(root, ec).lexically_normal(), fs::canonical(root, ec)}) {
    if (base.empty()) continue;
    const fs::path rel = p.lexically_relative(base);
    if (!rel.empty() && *rel.begin() != "..") return rel;
  }
  return {};
}

// O_NONBLOCK: opening a FIFO someone placed in the folder must not hang the
// request (reads of a regular file ignore it).
constexpr int kFileFlags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;

// openat2(2): the kernel resolves `rel` and fails (EXDEV, ELOOP) if any
// step would leave `dir` or pass a symlink. -2 when the kernel (or a
// seccomp filter) has no openat2, so the caller walks instead.
int open_with_openat2(int dir, const fs::path& rel) {
  open_how how{};
  how.flags = kFileFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  // glibc 2.36 has no openat2 wrapper.
  const long fd = ::syscall(SYS_openat2, dir, rel.c_str(), &how, sizeof how);
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) return -2;
  return static_cast<int>(fd);
}

// The same without openat2: one openat per component, each refusing a
// symlink (O_NOFOLLOW) and each directory held open while the next is
// opened from it, so no component can be swapped behind the walk.
int open_by_walking(int root, const fs::path& rel) {
  Fd dir;
  int at = root;
  auto it = rel.begin();
  for (auto next = std::next(it); next != rel.end(); it = next, ++next) {
    if (*it == ".." || *it == ".") return -1;
    Fd sub(::openat(at, it->c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.ok()) return -1;
    dir = std::move(sub);
    at = dir.get();
  }
  if (*it == ".." || *it == ".") return -1;
  return ::openat(at, it->c_str(), kFileFlags | O_NOFOLLOW);
}

}  // namespace

std::vector<uint8_t> read_media_file(const std::string& root, const std::string& path, size_t max_bytes,
                                     const std::string& param, BeneathOpen how) {
  const fs::path rel = relative_to_root(root, path);
  if (rel.empty() || rel == "." || *rel.begin() == ".." || rel.is_absolute()) not_allowed(param);
  // The folder itself is the operator's choice and may be reached through a symlink.
  const Fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir.ok()) throw ApiError(500, "internal_error", "the allowed media folder cannot be opened", param);
  int fd = how == BeneathOpen::Auto ? open_with_openat2(dir.get(), rel) : -2;
  if (fd == -2) fd = open_by_walking(dir.get(), rel);
  const Fd file(fd);
  if (!file.ok()) not_allowed(param);

  struct stat st {};
  if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) not_allowed(param);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes)
    throw ApiError(413, "image_too_large",
                   cat("the image file is ", size, " bytes, over the limit of ", max_bytes, " bytes (--max-image-bytes)"),
                   param);
  // Read to the end rather than trusting st_size: a file that grows while it
  // is read is still capped.
  std::vector<uint8_t> bytes(static_cast<size_t>(size) + 1);
  size_t got = 0;
  for (;;) {
    if (got == bytes.size()) {
      if (bytes.size() > max_bytes)
        throw ApiError(413, "image_too_large",
                       cat("the image file grew past the limit of ", max_bytes, " bytes (--max-image-bytes) while read"),
                       param);
      bytes.resize(std::min(bytes.size() * 2, max_bytes + 1));
    }
    const ssize_t n = ::read(file.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw ApiError(400, "image_not_readable", "the image file cannot be read", param);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

}  // namespace qvl
