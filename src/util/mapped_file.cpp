#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/error.h"
#include "util/huge_pages.h"

namespace qvl {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail(path, ": cannot stat: ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      fail(path, ": cannot map ", size_, " bytes: ", std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(p);
#ifdef MADV_HUGEPAGE
    // Asks the page cache for 2 MB folios when it reads the file from disk,
    // mapped with one page-table entry each (smaps: FilePmdMapped), and still
    // shared by every process mapping the file. Decode reading a bf16
    // checkpoint in place after a cold read ran at 6.6-8.3 tok/s on a Zen 5
    // VM without this, 11.7-12.1 with it, and 12-13 from a private copy.
    // Advice only: it changes nothing for pages already cached, and a kernel
    // without large page-cache folios ignores it.
    if (size_ >= kHugePageBytes) ::madvise(p, size_, MADV_HUGEPAGE);
#endif
  }
  ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open: ", std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) fail(path, ": read error");
  return out.str();
}

}  // namespace qvl
