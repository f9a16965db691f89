// The picture in a "data:image/jpeg;base64,..." URL the server sent (page and
// frame thumbnails), decoded for a test to look at.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "image/image.h"
#include "server/media/base64.h"

namespace qvl::test {

inline qvl::Image decode_jpeg_data_url(const std::string& url) {
  const std::string prefix = "data:image/jpeg;base64,";
  EXPECT_EQ(url.rfind(prefix, 0), 0u) << url.substr(0, 40);
  const auto bytes = base64_decode(std::string_view(url).substr(prefix.size()));
  EXPECT_TRUE(bytes);
  return bytes ? decode_image(*bytes) : qvl::Image{};
}

}  // namespace qvl::test
