// Encoding RGB images for clients to look at (the server's page
// thumbnails): what comes back to a browser as a data: URL.
#pragma once

#include <cstdint>
#include <vector>

#include "image/image.h"

namespace qvl {

// Baseline JPEG (libjpeg-turbo), 4:2:0 at `quality` 1..100. JPEG rather
// than PNG: a rendered page of text or a scan is a fifth to a tenth of the
// bytes at a quality that reads the same on a thumbnail. Throws qvl::Error
// for an empty image, pixels that do not match its size, or a side over
// JPEG's 65500 px.
std::vector<uint8_t> encode_jpeg(const Image& image, int quality = 85);

}  // namespace qvl
