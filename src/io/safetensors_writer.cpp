#include "io/safetensors_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace qvl {

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string safetensors_header(const std::vector<TensorInfo>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  size_t offset = 0;
  for (const TensorInfo& t : tensors) {
    for (int64_t d : t.shape)
      if (d < 0) fail("safetensors writer: tensor '", t.name, "' has a negative dimension");
    size_t n = t.nbytes();
    h[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data section 8-byte aligned, as safetensors pads
  std::string out(8, '\0');
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return out + text;
}

namespace {

// An output file descriptor that removes its temporary file unless committed.
class TmpFile {
 public:
  explicit TmpFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(tmp_, ": cannot create: ", std::strerror(errno));
  }
  ~TmpFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  TmpFile(const TmpFile&) = delete;
  TmpFile& operator=(const TmpFile&) = delete;

  void write_all(const uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail(tmp_, ": write failed: ", std::strerror(errno));
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  void commit() {
    if (::close(fd_) != 0) {
      fd_ = -1;
      fail(tmp_, ": close failed: ", std::strerror(errno));
    }
    fd_ = -1;
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail(path_, ": cannot rename from ", tmp_, ": ", std::strerror(errno));
    committed_ = true;
  }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorInfo>& tensors, const TensorFill& fill,
                       const WriteOptions& options) {
  TmpFile out(path);
  std::string header = safetensors_header(tensors, options.metadata);
  out.write_all(reinterpret_cast<const uint8_t*>(header.data()), header.size());

  // Two buffers: one is filled while the other is written in the background.
  size_t total = 0;
  for (const TensorInfo& t : tensors) total += t.nbytes();
  const size_t cap = std::max<size_t>(8, std::min(options.chunk_bytes, total));
  std::unique_ptr<uint8_t[]> buf[2] = {std::make_unique_for_overwrite<uint8_t[]>(cap),
                                       std::make_unique_for_overwrite<uint8_t[]>(cap)};
  std::future<void> in_flight;
  int cur = 0;
  size_t pos = 0;
  auto submit = [&] {
    if (pos == 0) return;
    if (in_flight.valid()) in_flight.get();  // writes stay in file order
    const uint8_t* p = buf[cur].get();
    size_t n = pos;
    in_flight = std::async(std::launch::async, [&out, p, n] { out.write_all(p, n); });
    cur ^= 1;  // the other buffer's write has finished: refill it
    pos = 0;
  };
  try {
    for (size_t i = 0; i < tensors.size(); ++i) {
      const size_t total = tensors[i].nbytes(), elem = dtype_size(tensors[i].dtype);
      size_t done = 0;
      while (done < total) {
        size_t n = std::min(total - done, (cap - pos) / elem * elem);
        if (n == 0) {  // no room for a whole element: flush what the buffer holds
          submit();
          continue;
        }
        fill(i, done, std::span<uint8_t>(buf[cur].get() + pos, n));
        pos += n;
        done += n;
        if (pos == cap) submit();
      }
    }
    submit();
    if (in_flight.valid()) in_flight.get();
  } catch (...) {
    if (in_flight.valid()) in_flight.wait();
    throw;
  }
  out.commit();
}

void write_safetensors(const std::string& path, const std::vector<TensorInfo>& tensors,
                       const std::vector<std::vector<uint8_t>>& data) {
  if (data.size() != tensors.size()) fail("safetensors writer: ", tensors.size(), " tensors but ", data.size(), " data buffers");
  for (size_t i = 0; i < tensors.size(); ++i)
    if (data[i].size() != tensors[i].nbytes())
      fail("safetensors writer: tensor '", tensors[i].name, "' needs ", tensors[i].nbytes(), " bytes, got ", data[i].size());
  write_safetensors(path, tensors, [&](size_t i, size_t off, std::span<uint8_t> out) {
    std::memcpy(out.data(), data[i].data() + off, out.size());
  });
}

}  // namespace qvl
