// A PDF on disk, for front ends that take file paths (qvl run).
#pragma once

#include <string>
#include <vector>

#include "pdf/pdf_pages.h"

namespace qvl {

// Whether the file starts with "%PDF-" (its contents decide, not its name).
// False for a file that cannot be read: the image decoder then says why.
bool is_pdf_file(const std::string& path);

// render_pdf over the file's bytes; refuses a file over limits.max_bytes
// from its size, before reading it.
std::vector<PdfPageImage> render_pdf_file(const std::string& path, const PdfRenderRequest& request,
                                          const PdfLimits& limits = {});

}  // namespace qvl
