// What Poppler says while it reads a file ("Couldn't read xref table"),
// caught so an error can quote it instead of Poppler printing it to stderr.
//
// Poppler reports through one process-wide callback. It is set once, to a
// function that hands each message to the PopplerMessages alive on the
// calling thread (Poppler reports on the thread doing the work), and drops
// it when there is none: a hostile file cannot flood the server's log.
#pragma once

#include <string>
#include <vector>

namespace qvl::pdf_detail {

class PopplerMessages {
 public:
  PopplerMessages();  // starts collecting on this thread
  ~PopplerMessages();
  PopplerMessages(const PopplerMessages&) = delete;
  PopplerMessages& operator=(const PopplerMessages&) = delete;

  // The first few messages (at most kKept), without Poppler's "error: " prefix.
  const std::vector<std::string>& messages() const { return messages_; }
  // " (Poppler: first; second)" or "" when Poppler said nothing.
  std::string quoted() const;

  static constexpr size_t kKept = 4;
  void add(const std::string& message);

 private:
  std::vector<std::string> messages_;
  PopplerMessages* outer_;  // an enclosing collector on this thread, restored on destruction
};

}  // namespace qvl::pdf_detail
