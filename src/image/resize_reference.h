// The bicubic resize with the plain one-pixel-at-a-time horizontal pass: the
// specification the fast pass is tested against.
#pragma once

#include "image/image.h"

namespace qvl::image_detail {

Image resize_bicubic_scalar(const Image& src, int width, int height);

}  // namespace qvl::image_detail
