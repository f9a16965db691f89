// The web page (web/), embedded into the binary at build time by cmake/embed_web.cmake, so
// `qvl serve` needs no files beside it and works offline. The definitions are generated into the
// build directory (library qvl_web) from cmake/web_assets.cpp.in.
#pragma once

#include <span>
#include <string_view>

namespace qvl {

struct WebAsset {
  std::string_view path;  // URL path, e.g. "/js/app.js"
  std::string_view mime;  // Content-Type to send, with charset for text
  std::string_view data;  // the file's bytes, exactly as in web/
};

// Every embedded file, sorted by path.
std::span<const WebAsset> web_assets();

// The file served at an URL path ("/" is "/index.html"), or nullptr. The path must already be
// stripped of its query string; nothing outside the embedded set can be reached.
const WebAsset* find_web_asset(std::string_view path);

}  // namespace qvl
