#include "pdf/poppler_messages.h"

#include <poppler-global.h>

#include <algorithm>
#include <mutex>

namespace qvl::pdf_detail {
namespace {

thread_local PopplerMessages* current = nullptr;

void on_poppler_message(const std::string& message, void*) {
  if (current) current->add(message);
}

}  // namespace

PopplerMessages::PopplerMessages() : outer_(current) {
  static std::once_flag installed;
  std::call_once(installed, [] { poppler::set_debug_error_function(on_poppler_message, nullptr); });
  current = this;
}

PopplerMessages::~PopplerMessages() { current = outer_; }

void PopplerMessages::add(const std::string& message) {
  std::string m = message.rfind("error: ", 0) == 0 ? message.substr(7) : message;
  if (m.size() > 200) m = m.substr(0, 200) + "...";
  // Poppler repeats itself as it retries ("Couldn't find trailer dictionary" twice).
  if (messages_.size() < kKept && std::find(messages_.begin(), messages_.end(), m) == messages_.end())
    messages_.push_back(std::move(m));
}

std::string PopplerMessages::quoted() const {
  if (messages_.empty()) return "";
  std::string s = " (Poppler: ";
  for (size_t i = 0; i < messages_.size(); ++i) s += (i ? "; " : "") + messages_[i];
  return s + ")";
}

}  // namespace qvl::pdf_detail
