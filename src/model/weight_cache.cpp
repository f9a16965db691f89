#include "model/weight_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <set>

#include "io/hub_cache.h"
#include "io/hub_sha.h"
#include "ops/quant.h"
#include "util/checksum.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'Q', 'V', 'L', 'W', 'C', 'A', 'C', 'H'};
constexpr const char* kSuffix = ".qvlw";
constexpr uint64_t kChecksumChunk = uint64_t{4} << 20;  // pieces of the data checksummed (and verified) apart
constexpr int64_t kMaxDim = int64_t{1} << 31;
constexpr auto kStaleTempAge = std::chrono::hours(1);

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t format_bits;  // 8 (q8) or 4 (q4)
  char key[64];          // hex SHA-256 of the key text
  uint64_t file_bytes;
  uint64_t table_offset;
  uint64_t table_bytes;
  uint64_t table_checksum;
  uint64_t chunk_bytes;
  uint64_t header_checksum;  // checksum64 of the bytes above
};
static_assert(sizeof(Header) == 128, "the header is 128 bytes on disk");
constexpr uint64_t kDataBegin = sizeof(Header);

uint32_t format_bits(WeightFormat f) {
  if (f == WeightFormat::Q8) return 8;
  if (f == WeightFormat::Q4) return 4;
  fail("the weight cache holds q8 and q4 matrices, not ", weight_format_name(f));
}

// Appends little-endian fields (x86-64 and AArch64 Linux are little-endian;
// the version field would reject a file from anything else).
struct TableWriter {
  std::string out;
  void u32(uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
  void u64(uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    out += s;
  }
};

// Reads the table; any read past its end throws (caught as "table truncated").
struct TableReader {
  const uint8_t* p;
  size_t left;
  void take(void* dst, size_t n) {
    if (n > left) fail("table ends early");
    std::memcpy(dst, p, n);
    p += n;
    left -= n;
  }
  uint32_t u32() {
    uint32_t v;
    take(&v, 4);
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    take(&v, 8);
    return v;
  }
  std::string str() {
    const uint32_t n = u32();
    if (n > left) fail("table ends early");
    std::string s(reinterpret_cast<const char*>(p), n);
    p += n;
    left -= n;
    return s;
  }
};

struct ParsedEntry {
  std::string name;
  int64_t rows, cols;
  uint64_t offset, bytes;
};

struct ParsedFile {
  Header header;
  WeightFormat format;
  std::string key, source;
  std::vector<ParsedEntry> entries;
  std::vector<uint64_t> chunk_checksums;
};

// Checks everything but the data checksums; throws qvl::Error saying what is
// wrong.
ParsedFile parse(const uint8_t* data, size_t size) {
  ParsedFile f;
  if (size < sizeof(Header)) fail("file of ", size, " bytes is shorter than its header");
  std::memcpy(&f.header, data, sizeof(Header));
  const Header& h = f.header;
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) fail("not a qvl weight cache file (bad magic)");
  if (h.header_checksum != checksum64(data, offsetof(Header, header_checksum))) fail("header checksum mismatch");
  if (h.version != kWeightCacheVersion)
    fail("format version ", h.version, ", this qvl reads version ", kWeightCacheVersion);
  if (h.format_bits != 8 && h.format_bits != 4) fail("unknown weight format code ", h.format_bits);
  f.format = h.format_bits == 8 ? WeightFormat::Q8 : WeightFormat::Q4;
  if (h.file_bytes != size) fail("file is ", size, " bytes, its header says ", h.file_bytes, " (truncated?)");
  if (h.table_offset < kDataBegin || h.table_offset > size || h.table_bytes != size - h.table_offset)
    fail("table offset ", h.table_offset, " and size ", h.table_bytes, " do not fit the file");
  if (h.chunk_bytes == 0 || h.chunk_bytes % 64 != 0) fail("bad checksum chunk size ", h.chunk_bytes);
  const uint8_t* table = data + h.table_offset;
  if (checksum64(table, h.table_bytes) != h.table_checksum) fail("table checksum mismatch");
  f.key.assign(h.key, sizeof(h.key));

  TableReader r{table, static_cast<size_t>(h.table_bytes)};
  f.source = r.str();
  const uint64_t count = r.u64();
  if (count > r.left / 36) fail("table claims ", count, " matrices");
  std::set<std::string> names;
  for (uint64_t i = 0; i < count; ++i) {
    ParsedEntry e;
    e.name = r.str();
    e.rows = static_cast<int64_t>(r.u64());
    e.cols = static_cast<int64_t>(r.u64());
    e.offset = r.u64();
    e.bytes = r.u64();
    if (e.rows <= 0 || e.cols <= 0 || e.rows >= kMaxDim || e.cols >= kMaxDim)
      fail("matrix ", e.name, " has shape [", e.rows, ", ", e.cols, "]");
    if (e.bytes != WeightMatrix::storage_bytes(f.format, e.rows, e.cols))
      fail("matrix ", e.name, " holds ", e.bytes, " bytes, its shape needs ",
           WeightMatrix::storage_bytes(f.format, e.rows, e.cols));
    if (e.offset % 64 != 0 || e.offset < kDataBegin || e.offset > h.table_offset ||
        e.bytes > h.table_offset - e.offset)
      fail("matrix ", e.name, " at offset ", e.offset, " is not 64-byte aligned inside the data");
    if (!names.insert(e.name).second) fail("matrix ", e.name, " is listed twice");
    f.entries.push_back(std::move(e));
  }
  const uint64_t data_bytes = h.table_offset - kDataBegin;
  const uint64_t chunks = (data_bytes + h.chunk_bytes - 1) / h.chunk_bytes;
  if (r.u64() != chunks) fail("table's checksum count does not match the data size");
  for (uint64_t i = 0; i < chunks; ++i) f.chunk_checksums.push_back(r.u64());
  if (r.left != 0) fail(r.left, " stray bytes after the table");
  return f;
}

// Index of the first data chunk whose checksum differs, or -1.
int64_t first_bad_chunk(const uint8_t* data, const ParsedFile& f, ThreadPool* pool) {
  const Header& h = f.header;
  const int64_t n = static_cast<int64_t>(f.chunk_checksums.size());
  std::atomic<int64_t> bad{n};
  auto check = [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      const uint64_t begin = kDataBegin + static_cast<uint64_t>(i) * h.chunk_bytes;
      const uint64_t len = std::min(h.chunk_bytes, h.table_offset - begin);
      if (checksum64(data + begin, len) != f.chunk_checksums[i]) {
        int64_t cur = bad.load();
        while (i < cur && !bad.compare_exchange_weak(cur, i)) {
        }
      }
    }
  };
  if (pool)
    pool->parallel_for(n, check);
  else
    check(0, n, 0);
  return bad.load() == n ? -1 : bad.load();
}

std::string sha256_hex(const void* p, size_t n) {
  hub::Sha256 s;
  s.update(p, n);
  return s.hex();
}

// SHA-256 of a safetensors file's header (8-byte length + JSON).
std::string header_sha256(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  uint64_t n = 0;
  std::string bytes;
  bool ok = ::pread(fd, &n, 8, 0) == 8 && n <= kMaxSafetensorsHeaderBytes;
  if (ok) {
    bytes.resize(8 + n);
    ok = ::pread(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size());
  }
  ::close(fd);
  if (!ok) fail(path, ": cannot read its safetensors header");
  return sha256_hex(bytes.data(), bytes.size());
}

std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, ": cannot stat: ", std::strerror(errno));
  std::error_code ec;
  const fs::path real = fs::canonical(path, ec);
  return cat("file ", ec ? path : real.string(), " dev ", st.st_dev, " ino ", st.st_ino, " size ", st.st_size,
             " mtime ", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, " ctime ", st.st_ctim.tv_sec, ".",
             st.st_ctim.tv_nsec, " header-sha256 ", header_sha256(path));
}

bool is_cache_file(const fs::path& p) { return p.extension() == kSuffix; }
bool is_temp_file(const fs::path& p) { return p.filename().string().find(std::string(kSuffix) + ".tmp.") != std::string::npos; }

}  // namespace

std::string default_weight_cache_dir() {
  if (const char* v = std::getenv("QVL_WEIGHT_CACHE"); v && *v) return v;
  fs::path hub = fs::path(hub::default_cache_dir()).lexically_normal();
  if (!hub.has_filename()) hub = hub.parent_path();  // "a/b/" -> "a/b"
  return (hub.parent_path() / "qvl-weights").string();
}

std::string weight_cache_key_text(const ModelFolder& folder, const SafeTensors& st, WeightFormat format) {
  std::string text = cat("qvl weight cache v", kWeightCacheVersion, "\n");
  text += cat("layout group ", quant::kGroup, " block-rows ", quant::kBlockRows, " unit ", quant::kUnit, "\n");
  text += cat("format ", weight_format_name(format), "\n");
  const std::string config = read_file((fs::path(folder.dir) / "config.json").string());
  text += cat("config.json sha256 ", sha256_hex(config.data(), config.size()), "\n");
  for (const std::string& f : st.files()) text += file_identity(f) + "\n";
  return text;
}

std::string weight_cache_key(const ModelFolder& folder, const SafeTensors& st, WeightFormat format) {
  const std::string text = weight_cache_key_text(folder, st, format);
  return sha256_hex(text.data(), text.size());
}

WeightCache::WeightCache(WeightCacheOptions options)
    : options_(std::move(options)), dir_(options_.dir.empty() ? default_weight_cache_dir() : options_.dir) {}

std::string WeightCache::path_for(const std::string& key) const { return (fs::path(dir_) / (key + kSuffix)).string(); }

std::optional<MatrixTable> WeightCache::open(const std::string& key, WeightFormat format, ThreadPool* pool,
                                             std::ostream& log) const {
  const std::string path = path_for(key);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  try {
    auto file = std::make_shared<MappedFile>(path);
    const ParsedFile f = parse(file->data(), file->size());
    if (f.key != key) fail("its key ", f.key.substr(0, 12), "... is not the checkpoint's");
    if (f.format != format) fail("it holds ", weight_format_name(f.format), ", not ", weight_format_name(format));
    if (int64_t bad = first_bad_chunk(file->data(), f, pool); bad >= 0)
      fail("data checksum mismatch at byte ", kDataBegin + static_cast<uint64_t>(bad) * f.header.chunk_bytes);
    MatrixTable out;
    const std::shared_ptr<const void> keep(file, file->data());
    for (const ParsedEntry& e : f.entries)
      out.emplace(e.name, WeightMatrix::view_quantized(file->data() + e.offset, e.rows, e.cols, format, keep));
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // last use, for eviction
    return out;
  } catch (const std::exception& e) {
    log << "qvl: warning: ignoring weight cache file " << path << ": " << e.what() << "; converting again\n";
    return std::nullopt;
  }
}

std::string WeightCache::store(const std::string& key, WeightFormat format, const std::string& source,
                               const MatrixTable& matrices) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) fail(dir_, ": cannot create the weight cache folder: ", ec.message());
  const std::string path = path_for(key);
  WeightCacheWriter w(path, key, format, source);
  for (const auto& [name, m] : matrices) w.add(name, m);
  w.commit();
  evict(path);
  return path;
}

std::vector<WeightCacheFile> WeightCache::list() const {
  std::vector<WeightCacheFile> out;
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator(dir_, ec)) {
    if (!d.is_regular_file(ec) || !is_cache_file(d.path())) continue;
    WeightCacheFile c;
    c.path = d.path().string();
    struct stat st {};
    if (::stat(c.path.c_str(), &st) == 0) {
      c.bytes = static_cast<uint64_t>(st.st_size);
      c.last_used = st.st_mtim.tv_sec;
    }
    try {
      MappedFile file(c.path);  // only the header and table pages are read
      const ParsedFile f = parse(file.data(), file.size());
      c.valid = true;
      c.key = f.key;
      c.format = weight_format_name(f.format);
      c.source = f.source;
      c.matrices = f.entries.size();
    } catch (const std::exception& e) {
      c.problem = e.what();
    }
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.last_used > b.last_used; });
  return out;
}

void WeightCache::evict(const std::string& keep) const {
  struct Candidate {
    fs::path path;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<Candidate> files;
  uint64_t total = 0;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& d : fs::directory_iterator(dir_, ec)) {
    if (!d.is_regular_file(ec)) continue;
    const fs::file_time_type t = d.last_write_time(ec);
    if (is_temp_file(d.path())) {
      // A writer that died mid-file; a live one writes more often than this.
      if (now - t > kStaleTempAge) fs::remove(d.path(), ec);
      continue;
    }
    if (!is_cache_file(d.path())) continue;
    const uint64_t bytes = d.file_size(ec);
    total += bytes;
    if (d.path() != fs::path(keep)) files.push_back({d.path(), t, bytes});
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.used < b.used; });
  for (const Candidate& c : files) {
    if (total <= options_.max_bytes) break;
    // A process still mapping it keeps its pages until it unmaps (unlink
    // removes the name only).
    if (fs::remove(c.path, ec)) total -= c.bytes;
  }
}

WeightCacheWriter::WeightCacheWriter(std::string path, const std::string& key, WeightFormat format, std::string source)
    : path_(std::move(path)), key_(key), source_(std::move(source)), format_(format) {
  format_bits(format);  // throws for bf16/f32
  if (key_.size() != 64) fail("weight cache key must be 64 hex digits, got '", key_, "'");
  std::random_device rd;
  tmp_ = cat(path_, ".tmp.", ::getpid(), ".", rd());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(tmp_, ": cannot create: ", std::strerror(errno));
  const Header zero{};
  write_all(&zero, sizeof(zero));
}

WeightCacheWriter::~WeightCacheWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void WeightCacheWriter::write_all(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd_, b, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(tmp_, ": write failed: ", std::strerror(errno));
    b += w;
    n -= static_cast<size_t>(w);
    offset_ += static_cast<uint64_t>(w);
  }
}

void WeightCacheWriter::add(const std::string& name, const WeightMatrix& m) {
  if (fd_ < 0) fail(path_, ": add after commit");
  if (m.format() != format_)
    fail("weight cache of ", weight_format_name(format_), " given ", name, " in ", weight_format_name(m.format()));
  static const char zeros[64] = {};
  write_all(zeros, (64 - offset_ % 64) % 64);
  const size_t bytes = WeightMatrix::storage_bytes(m.format(), m.rows(), m.cols());
  entries_.push_back({name, m.rows(), m.cols(), offset_, bytes});
  write_all(m.data(), bytes);
}

void WeightCacheWriter::commit() {
  if (fd_ < 0) fail(path_, ": committed twice");
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kWeightCacheVersion;
  h.format_bits = format_bits(format_);
  std::memcpy(h.key, key_.data(), sizeof(h.key));
  h.chunk_bytes = kChecksumChunk;
  h.table_offset = offset_;

  TableWriter t;
  t.str(source_);
  t.u64(entries_.size());
  for (const Entry& e : entries_) {
    t.str(e.name);
    t.u64(static_cast<uint64_t>(e.rows));
    t.u64(static_cast<uint64_t>(e.cols));
    t.u64(e.offset);
    t.u64(e.bytes);
  }
  // The data as written, read back through the page cache.
  {
    MappedFile written(tmp_);
    const uint64_t data_bytes = h.table_offset - kDataBegin;
    const uint64_t chunks = (data_bytes + kChecksumChunk - 1) / kChecksumChunk;
    t.u64(chunks);
    for (uint64_t i = 0; i < chunks; ++i) {
      const uint64_t begin = kDataBegin + i * kChecksumChunk;
      t.u64(checksum64(written.data() + begin, std::min(kChecksumChunk, h.table_offset - begin)));
    }
  }
  write_all(t.out.data(), t.out.size());
  h.table_bytes = t.out.size();
  h.table_checksum = checksum64(t.out.data(), t.out.size());
  h.file_bytes = offset_;
  h.header_checksum = checksum64(&h, offsetof(Header, header_checksum));
  if (::pwrite(fd_, &h, sizeof(h), 0) != static_cast<ssize_t>(sizeof(h)))
    fail(tmp_, ": header write failed: ", std::strerror(errno));
  // On disk before the name points at it: a crash leaves the old file or the
  // whole new one.
  if (::fsync(fd_) != 0) fail(tmp_, ": fsync failed: ", std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    fail(path_, ": cannot rename the finished cache file into place: ", std::strerror(err));
  }
  const int dir = ::open(fs::path(path_).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace qvl
