#include "pdf/pdf_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace qvl {

bool is_pdf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[5] = {};
  return in.read(magic, sizeof magic) && is_pdf({reinterpret_cast<const uint8_t*>(magic), sizeof magic});
}

std::vector<PdfPageImage> render_pdf_file(const std::string& path, const PdfRenderRequest& request,
                                          const PdfLimits& limits) {
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) fail("cannot read ", path, ": ", ec.message());
  if (size > limits.max_bytes) fail("PDF is ", size, " bytes, over the limit of ", limits.max_bytes, " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ", path, ": ", std::strerror(errno));
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (!in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size())))
    fail("cannot read ", path, ": it ended before its ", size, " bytes");
  return render_pdf(bytes, request, limits);
}

}  // namespace qvl
