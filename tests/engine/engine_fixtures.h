// What the engine tests share: the fixture folder, the golden manifest, the
// fixture images and one-turn greedy requests.
#pragma once

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "image/image.h"

namespace qvl::engine_test {

inline const std::string kFixtures = QVL_FIXTURES_DIR;

inline const nlohmann::json& manifest() {
  static const nlohmann::json m = [] {
    std::ifstream f(kFixtures + "/golden/manifest.json");
    std::stringstream ss;
    ss << f.rdbuf();
    return nlohmann::json::parse(ss.str());
  }();
  return m;
}

// A fixture image by file name (e.g. "gradient_320x240.png").
inline std::shared_ptr<const Image> fixture_image(const std::string& file) {
  return std::make_shared<Image>(load_image(kFixtures + "/golden/images/" + file));
}

// One user turn: the images, then the text; greedy (engine.h).
inline GenerateRequest user_request(const std::vector<std::shared_ptr<const Image>>& images, const std::string& text,
                                    int64_t max_tokens) {
  Message m{"user", {}};
  for (const auto& img : images) m.parts.push_back({"", img});
  m.parts.push_back({text, nullptr});
  return greedy_request({std::move(m)}, max_tokens);
}

}  // namespace qvl::engine_test
