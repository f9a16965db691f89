#include "engine/stop_strings.h"

#include <algorithm>

namespace qvl {

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (std::string& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
  for (const std::string& s : stops_) longest_ = std::max(longest_, s.size());
}

StopStrings::Result StopStrings::push(const std::string& piece) {
  Result r;
  if (stopped_) {
    r.stopped = true;
    return r;
  }
  text_ += piece;
  if (stops_.empty()) {
    r.emit = text_.substr(emitted_);
    emitted_ = text_.size();
    return r;
  }
  // A match can only involve the new piece and the held-back tail.
  const size_t from = emitted_ > longest_ ? emitted_ - longest_ : 0;
  size_t cut = std::string::npos;
  for (const std::string& s : stops_) cut = std::min(cut, text_.find(s, from));
  if (cut != std::string::npos) {
    text_.resize(cut);
    r.emit = cut > emitted_ ? text_.substr(emitted_) : std::string();
    emitted_ = text_.size();
    stopped_ = r.stopped = true;
    return r;
  }
  // Hold back the longest tail that is a prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_)
    for (size_t k = std::min(s.size() - 1, text_.size()); k > hold; --k)
      if (text_.compare(text_.size() - k, k, s, 0, k) == 0) {
        hold = k;
        break;
      }
  const size_t safe = std::max(emitted_, text_.size() - hold);
  r.emit = text_.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  return r;
}

std::string StopStrings::finish(const std::string& last_piece) {
  Result r = push(last_piece);
  if (stopped_) return r.emit;
  std::string rest = r.emit + text_.substr(emitted_);
  emitted_ = text_.size();
  return rest;
}

}  // namespace qvl
