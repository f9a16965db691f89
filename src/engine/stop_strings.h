// Stop strings over a stream of text pieces: text is released only once no
// stop string can still begin inside it, and the answer ends just before the
// first stop string found (which is not included).
#pragma once

#include <string>
#include <vector>

namespace qvl {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops);

  struct Result {
    std::string emit;      // text now safe to show
    bool stopped = false;  // a stop string was found; nothing more will be emitted
  };
  Result push(const std::string& piece);
  std::string finish(const std::string& last_piece);  // end of answer: release what was held back
  bool stopped() const { return stopped_; }
  const std::string& text() const { return text_; }  // the whole answer so far (stop string excluded)

 private:
  std::vector<std::string> stops_;
  std::string text_;
  size_t emitted_ = 0;
  size_t longest_ = 0;
  bool stopped_ = false;
};

}  // namespace qvl
