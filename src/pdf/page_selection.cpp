#include "pdf/page_selection.h"

#include <cstdint>
#include <string>

#include "util/error.h"

namespace qvl {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The selection as quoted in messages: a request may send megabytes of it.
std::string quoted(std::string_view s) {
  constexpr size_t kMax = 60;
  return "'" + std::string(s.substr(0, kMax)) + (s.size() > kMax ? "...'" : "'");
}

// A page number: digits only. Values past any real page count saturate, so
// "99999999999999999999" is reported as past the end, not as garbage.
bool parse_number(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out > (int64_t{1} << 40) ? out : out * 10 + (c - '0');
  }
  return true;
}

}  // namespace

std::vector<int> all_pages(int page_count) {
  std::vector<int> pages(page_count > 0 ? page_count : 0);
  for (int i = 0; i < page_count; ++i) pages[i] = i;
  return pages;
}

std::vector<int> parse_page_selection(std::string_view selection, int page_count) {
  const std::string where = "page selection " + quoted(selection);
  if (trim(selection).empty()) fail("the page selection is empty (expected pages like 1-3,7)");

  std::vector<int> pages;
  std::vector<int> chosen_by;  // [page_count] the item (its offset in `selection`) that chose each page, -1: none
  // `digits` as written: a saturated number is quoted, not its saturated value.
  auto check_page = [&](int64_t n, std::string_view digits, std::string_view item) {
    if (n == 0) fail(where, ": page 0 in '", item, "' does not exist (pages are numbered from 1)");
    if (n > page_count)
      fail(where, ": page ", digits, " in '", item, "' is past the end (the document has ", page_count,
           page_count == 1 ? " page)" : " pages)");
  };

  size_t start = 0, item_number = 0;
  while (start <= selection.size()) {
    size_t comma = selection.find(',', start);
    if (comma == std::string_view::npos) comma = selection.size();
    const std::string_view item = trim(selection.substr(start, comma - start));
    ++item_number;
    if (item.empty()) fail(where, ": item ", item_number, " is empty");

    const size_t dash = item.find('-');
    const std::string_view first_text = dash == std::string_view::npos ? item : trim(item.substr(0, dash));
    const std::string_view last_text = dash == std::string_view::npos ? item : trim(item.substr(dash + 1));
    const bool open_range = dash != std::string_view::npos && last_text.empty();  // "5-": to the last page
    int64_t first = 0, last = page_count;
    if (!parse_number(first_text, first) || (!open_range && !parse_number(last_text, last)))
      fail(where, ": '", item, "' is not a page number or a range of pages (like 1-3,7 or 5-)");
    check_page(first, first_text, item);
    if (!open_range) check_page(last, last_text, item);
    if (last < first) fail(where, ": the range '", item, "' runs backwards");

    if (chosen_by.empty()) chosen_by.assign(page_count, -1);
    for (int64_t p = first; p <= last; ++p) {
      int& owner = chosen_by[p - 1];
      if (owner >= 0) {
        // Names both items: the earlier one is what the user meant to keep.
        size_t end = selection.find(',', owner);
        if (end == std::string_view::npos) end = selection.size();
        fail(where, ": page ", p, " is selected twice ('", trim(selection.substr(owner, end - owner)), "' and '",
             item, "')");
      }
      owner = static_cast<int>(start);
      pages.push_back(static_cast<int>(p - 1));
    }
    start = comma + 1;
  }
  return pages;
}

}  // namespace qvl
