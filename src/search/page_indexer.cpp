#include "search/page_indexer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "engine/retrieval.h"
#include "image/encode.h"
#include "image/preprocess.h"
#include "io/hub_sha.h"
#include "util/error.h"

namespace qvl {
namespace {

// Thumbnails are for eyes, not the model: 80 keeps text legible at 256 px (as the document thumbnails).
constexpr int kThumbnailQuality = 80;

struct FileStamp {
  int64_t size = 0, mtime_ns = 0;
};

FileStamp stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail("cannot read ", path, ": ", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, " is not a file");
  return {static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
}

}  // namespace

const char* outcome_name(IndexOutcome o) {
  switch (o) {
    case IndexOutcome::Added: return "added";
    case IndexOutcome::Replaced: return "replaced";
    case IndexOutcome::Unchanged: return "unchanged";
  }
  return "?";
}

MediaLimits indexing_limits(MediaLimits limits) {
  limits.pdf.max_pages = kMaxIndexedPages;
  limits.pdf.max_total_pixels = limits.pdf.max_page_pixels * kMaxIndexedPages;
  return limits;
}

std::string sha256_hex(std::span<const uint8_t> bytes) {
  hub::Sha256 h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

std::vector<uint8_t> page_thumbnail(const Image& page, int size) {
  const int longest = std::max(page.width, page.height);
  if (longest <= size) return encode_jpeg(page, kThumbnailQuality);
  const double scale = static_cast<double>(size) / longest;
  const int w = std::max(1, static_cast<int>(page.width * scale + 0.5));
  const int h = std::max(1, static_cast<int>(page.height * scale + 0.5));
  return encode_jpeg(resize_bicubic(page, w, h), kThumbnailQuality);
}

void for_each_page(std::span<const uint8_t> bytes, const PdfRenderRequest& pdf, MediaIntake& intake,
                   const std::string& name,
                   const std::function<void(int64_t page, std::shared_ptr<const Image>)>& on_page) {
  if (!is_pdf(bytes)) {
    on_page(1, intake.image(bytes, name));
    return;
  }
  MediaIntake::PlannedPdf planned = intake.plan_pdf(bytes, pdf);
  for (const PdfPagePlan& page : planned.pages) on_page(page.index + 1, intake.pdf_page(planned.doc, page, name));
}

std::vector<float> embed_query(Engine& engine, const std::string& query, int64_t dimensions,
                               const std::optional<std::string>& instruction) {
  RetrievalInput in;
  in.texts.push_back(query);
  EmbedOptions o;
  o.instruction = instruction ? *instruction : std::string(kSearchQueryInstruction);
  o.dimensions = dimensions;
  return embed(engine, {in}, o).embeddings.at(0);
}

IndexedFile PageIndexer::index_file(const std::string& path, MediaIntake& intake) {
  const std::string absolute = std::filesystem::absolute(path).lexically_normal().string();
  const FileStamp stamp = stamp_of(absolute);
  const std::optional<SearchDocument> stored = store_.find(options_.collection, absolute);
  if (stored && stored->size == stamp.size && stored->mtime_ns == stamp.mtime_ns)
    return {absolute, IndexOutcome::Unchanged, stored->id, stored->pages};
  const std::vector<uint8_t> bytes =
      read_media_bytes(absolute, std::max(intake.limits().image.max_encoded_bytes, intake.limits().pdf.max_bytes));
  SearchDocument doc;
  doc.collection = options_.collection;
  doc.path = absolute;
  doc.size = static_cast<int64_t>(bytes.size());
  doc.mtime_ns = stamp.mtime_ns;
  doc.sha256 = sha256_hex(bytes);
  if (stored && stored->sha256 == doc.sha256) {  // copied or touched, the same bytes
    store_.touch(stored->id, doc.size, doc.mtime_ns);
    return {absolute, IndexOutcome::Unchanged, stored->id, stored->pages};
  }
  return store_pages(std::move(doc), bytes, false, intake, stored.has_value());
}

IndexedFile PageIndexer::index_bytes(const std::string& name, std::span<const uint8_t> bytes, MediaIntake& intake) {
  SearchDocument doc;
  doc.collection = options_.collection;
  doc.path = name;
  doc.size = static_cast<int64_t>(bytes.size());
  doc.sha256 = sha256_hex(bytes);
  const std::optional<SearchDocument> stored = store_.find(options_.collection, name);
  if (stored && stored->sha256 == doc.sha256) return {name, IndexOutcome::Unchanged, stored->id, stored->pages};
  return store_pages(std::move(doc), bytes, true, intake, stored.has_value());
}

IndexedFile PageIndexer::store_pages(SearchDocument doc, std::span<const uint8_t> bytes, bool keep_content,
                                     MediaIntake& intake, bool existed) {
  std::vector<SearchPage> pages;
  std::vector<RetrievalInput> batch;  // the pages not yet embedded, their SearchPages at the end of `pages`
  EmbedOptions eo;
  eo.dimensions = options_.dimensions;
  auto embed_batch = [&] {
    if (batch.empty()) return;
    EmbedResult r = embed(engine_, batch, eo);
    const size_t first = pages.size() - batch.size();
    for (size_t i = 0; i < batch.size(); ++i) pages[first + i].vector = std::move(r.embeddings[i]);
    batch.clear();
    intake.next_part();  // the batch's pages are dropped: the next ones are admitted afresh
  };
  try {
    for_each_page(bytes, options_.pdf, intake, doc.path, [&](int64_t number, std::shared_ptr<const Image> image) {
      SearchPage page;
      page.page = number;
      page.width = image->full_width ? image->full_width : image->width;
      page.height = image->full_height ? image->full_height : image->height;
      page.thumbnail = page_thumbnail(*image);
      pages.push_back(std::move(page));
      RetrievalInput in;
      in.images.push_back(std::move(image));
      batch.push_back(std::move(in));
      if (static_cast<int>(batch.size()) >= std::max(1, options_.batch_pages)) embed_batch();
    });
    embed_batch();
  } catch (const MediaTimeLimit&) {
    throw;
  } catch (const Error& e) {
    fail(doc.path, ": ", e.what());
  }
  doc.pages = static_cast<int64_t>(pages.size());
  const int64_t id = store_.put(doc, pages, keep_content ? bytes : std::span<const uint8_t>(), options_.model);
  return {doc.path, existed ? IndexOutcome::Replaced : IndexOutcome::Added, id, doc.pages};
}

}  // namespace qvl
