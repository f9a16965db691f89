#include "io/safetensors.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "util/error.h"
#include "util/json_reader.h"

namespace qvl {

namespace fs = std::filesystem;
using json = nlohmann::json;

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::I32: return 4;
    case DType::F8_E4M3: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
    case DType::F8_E4M3: return "F8_E4M3";
  }
  return "?";
}

std::optional<DType> dtype_from_name(const std::string& name) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::F8_E4M3})
    if (name == dtype_name(t)) return t;
  return std::nullopt;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// A non-negative JSON integer, or fails with `what` in the message.
uint64_t to_u64(const json& v, const std::string& where) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    int64_t x = v.get<int64_t>();
    if (x >= 0) return static_cast<uint64_t>(x);
    fail(where, " is negative (", x, ")");
  }
  fail(where, " is not an integer (", v.dump(), ")");
}

// Parses the header JSON in one linear pass (util/json_reader.h), refusing
// repeated keys (nlohmann would otherwise keep the last tensor silently) and
// numbers outside a double, each naming the header byte and file offset.
json parse_header(const std::string& path, const char* begin, const char* end) {
  JsonReadLimits limits;
  limits.max_depth = 64;  // a header is two levels deep; __metadata__ is strings
  limits.refuse_duplicate_keys = true;
  json header;
  JsonReadError e;
  if (!read_json(std::string_view(begin, static_cast<size_t>(end - begin)), limits, header, e)) {
    using K = JsonReadError::Kind;
    if (e.kind == K::duplicate_key && e.path.empty()) fail(path, ": tensor '", e.detail, "' appears twice in the header");
    if (e.kind == K::syntax)
      fail(path, ": header is not valid JSON (header byte ", e.byte, ", file offset ", 8 + e.byte, "): ", e.detail);
    if (e.has_byte) e.byte += 8;  // describe() names the file offset
    fail(path, ": header: ", e.describe());
  }
  if (!header.is_object()) fail(path, ": header is not a JSON object");
  return header;
}

// A file name from an index's weight_map, kept inside the index's folder.
void check_shard_name(const std::string& index_path, const std::string& tensor, const std::string& shard) {
  fs::path p(shard);
  bool escapes = shard.empty() || p.is_absolute();
  for (const auto& part : p)
    if (part == "..") escapes = true;
  if (escapes) fail(index_path, ": weight_map entry for tensor '", tensor, "' names shard '", shard, "', which is not a file inside the model folder");
}

}  // namespace

void SafeTensors::add_file(const std::string& path) {
  auto file = std::make_unique<MappedFile>(path);
  const std::string& name_of_file = file->path();
  const uint8_t* bytes = file->data();
  const size_t size = file->size();

  if (size < 8) fail(path, ": truncated: ", size, " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxSafetensorsHeaderBytes)
    fail(path, ": header length ", header_len, " exceeds the ", kMaxSafetensorsHeaderBytes, "-byte limit (corrupt file?)");
  if (header_len > size - 8)
    fail(path, ": header length ", header_len, " runs past the end of the file (", size, " bytes; truncated?)");
  const size_t data_begin = 8 + header_len;
  const size_t data_size = size - data_begin;

  const char* h = reinterpret_cast<const char*>(bytes + 8);
  json header = parse_header(path, h, h + header_len);

  struct Span {
    uint64_t begin, end;
    const std::string* name;
  };
  std::vector<Span> spans;
  std::vector<TensorView> views;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(path, ": __metadata__ is not a JSON object");
      if (files_.empty())
        for (auto& [k, v] : entry.items())
          if (v.is_string()) metadata_[k] = v.get<std::string>();
      continue;
    }
    const std::string where = cat(path, ": tensor '", name, "'");
    if (name.empty()) fail(path, ": a tensor has an empty name");
    if (!entry.is_object()) fail(where, ": entry is not a JSON object");
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) fail(where, ": missing or non-string \"dtype\"");
    const std::string dtype_str = entry["dtype"].get<std::string>();
    std::optional<DType> dtype = dtype_from_name(dtype_str);
    if (!dtype) fail(where, " has dtype ", dtype_str, ", which qvl does not support (BF16, F16, F32, F8_E4M3, I64, I32)");

    if (!entry.contains("shape") || !entry["shape"].is_array()) fail(where, ": missing or non-array \"shape\"");
    const json& jshape = entry["shape"];
    if (jshape.size() > 8) fail(where, ": shape has ", jshape.size(), " dimensions (more than 8)");
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    for (size_t i = 0; i < jshape.size(); ++i) {
      uint64_t d = to_u64(jshape[i], cat(where, ": shape dimension ", i));
      if (d > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, d, &numel))
        fail(where, ": shape ", jshape.dump(), " overflows");
      shape.push_back(static_cast<int64_t>(d));
    }
    uint64_t want_bytes = 0;
    if (__builtin_mul_overflow(numel, dtype_size(*dtype), &want_bytes)) fail(where, ": shape ", jshape.dump(), " overflows");

    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() || entry["data_offsets"].size() != 2)
      fail(where, ": \"data_offsets\" must be an array [begin, end]");
    uint64_t b = to_u64(entry["data_offsets"][0], where + ": data_offsets begin");
    uint64_t e = to_u64(entry["data_offsets"][1], where + ": data_offsets end");
    if (b > e) fail(where, ": data_offsets [", b, ", ", e, "] end before they begin");
    if (e > data_size)
      fail(where, ": data_offsets [", b, ", ", e, "] run past the data section (", data_size, " bytes; file offset ",
           data_begin + e, " > file size ", size, "; truncated?)");
    if (e - b != want_bytes)
      fail(where, ": shape ", shape_str(shape), " x ", dtype_str, " needs ", want_bytes, " bytes but data_offsets [", b,
           ", ", e, "] span ", e - b, " (at file offset ", data_begin + b, ")");

    TensorView v;
    v.name = name;
    v.dtype = *dtype;
    v.shape = std::move(shape);
    v.data = bytes + data_begin + b;
    v.nbytes = e - b;
    v.file = &name_of_file;
    v.file_offset = data_begin + b;
    views.push_back(std::move(v));
  }
  for (const TensorView& v : views)
    if (v.nbytes > 0) spans.push_back({v.file_offset, v.file_offset + v.nbytes, &v.name});
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  size_t reach = 0;  // the span reaching furthest so far
  for (size_t i = 1; i < spans.size(); ++i) {
    if (spans[i].begin < spans[reach].end)
      fail(path, ": tensors '", *spans[reach].name, "' and '", *spans[i].name, "' overlap at file offset ", spans[i].begin);
    if (spans[i].end > spans[reach].end) reach = i;
  }

  for (const TensorView& v : views)
    if (const TensorView* other = find(v.name)) fail(path, ": tensor '", v.name, "' is also in ", *other->file);
  for (TensorView& v : views) {
    std::string key = v.name;
    tensors_.emplace(std::move(key), std::move(v));
  }
  files_.push_back(std::move(file));
}

void SafeTensors::open_index(const std::string& index_path) {
  const json index = read_json_file(read_file(index_path), index_path);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    fail(index_path, ": missing \"weight_map\" object");
  const json& weight_map = index["weight_map"];
  if (weight_map.empty()) fail(index_path, ": \"weight_map\" lists no tensors");

  const fs::path dir = fs::path(index_path).parent_path();
  std::vector<std::string> shards;  // in first-mention order
  std::set<std::string> known;
  std::map<std::string, std::string> shard_of;  // tensor -> shard path
  for (auto& [tensor, shard] : weight_map.items()) {
    if (!shard.is_string()) fail(index_path, ": weight_map entry for tensor '", tensor, "' is not a file name");
    std::string name = shard.get<std::string>();
    check_shard_name(index_path, tensor, name);
    std::string shard_path = (dir / name).string();
    if (known.insert(shard_path).second) {
      std::error_code ec;
      if (!fs::is_regular_file(shard_path, ec))
        fail(index_path, ": shard '", name, "' (holding tensor '", tensor, "') is missing from ", dir.string());
      shards.push_back(shard_path);
    }
    shard_of[tensor] = shard_path;
  }
  for (const std::string& shard : shards) add_file(shard);
  for (const auto& [tensor, shard] : shard_of) {
    const TensorView* v = find(tensor);
    if (!v) fail(index_path, ": tensor '", tensor, "' is mapped to ", shard, ", which does not contain it");
    if (*v->file != shard)
      fail(index_path, ": tensor '", tensor, "' is mapped to ", shard, " but is in ", *v->file);
  }
}

SafeTensors SafeTensors::open(const std::string& path) {
  SafeTensors st;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    fs::path index = fs::path(path) / "model.safetensors.index.json";
    fs::path single = fs::path(path) / "model.safetensors";
    if (fs::exists(index, ec))
      st.open_index(index.string());
    else if (fs::exists(single, ec))
      st.add_file(single.string());
    else
      fail(path, ": no model.safetensors or model.safetensors.index.json in this folder");
  } else if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) {
    st.open_index(path);
  } else {
    st.add_file(path);
  }
  return st;
}

const TensorView* SafeTensors::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& SafeTensors::get(const std::string& name) const {
  if (const TensorView* v = find(name)) return *v;
  std::string where = files_.empty() ? std::string("(no file)") : files_.front()->path();
  if (files_.size() > 1) where += cat(" and ", files_.size() - 1, " more shard(s)");
  fail("tensor '", name, "' not found in ", where);
}

std::vector<std::string> SafeTensors::files() const {
  std::vector<std::string> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

size_t SafeTensors::total_bytes() const {
  size_t n = 0;
  for (const auto& f : files_) n += f->size();
  return n;
}

size_t SafeTensors::populate(const void* p, size_t n) const {
  const auto* b = static_cast<const uint8_t*>(p);
  if (n == 0) return 0;
  for (const auto& f : files_) {
    const uint8_t* fb = f->data();
    if (!fb || b < fb || b >= fb + f->size()) continue;
    const size_t len = std::min(n, static_cast<size_t>(fb + f->size() - b));
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = reinterpret_cast<uintptr_t>(b) / page * page;  // the mapping itself is page-aligned
    const uintptr_t end = reinterpret_cast<uintptr_t>(b) + len;
    void* start = reinterpret_cast<void*>(begin);
#ifdef __linux__
    constexpr int kPopulateRead = 22;  // MADV_POPULATE_READ, absent from older headers
    if (madvise(start, end - begin, kPopulateRead) == 0) return len;
#endif
    // Older kernels (EINVAL): read ahead, then touch each page ourselves.
    madvise(start, end - begin, MADV_WILLNEED);
    volatile uint8_t sink = 0;
    for (uintptr_t a = begin; a < end; a += page) sink = sink + *reinterpret_cast<const uint8_t*>(a);
    return len;
  }
  return 0;
}

bool SafeTensors::contains(const void* p) const {
  const auto* b = static_cast<const uint8_t*>(p);
  for (const auto& f : files_)
    if (f->data() && b >= f->data() && b < f->data() + f->size()) return true;
  return false;
}

}  // namespace qvl
