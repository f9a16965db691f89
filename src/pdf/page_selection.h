// A request's choice of pages, as people write it in print dialogs: "1-3,7".
#pragma once

#include <string_view>
#include <vector>

namespace qvl {

// Parses a page selection against a document of `page_count` pages and
// returns 0-based page indices in the order written.
//
// Grammar: items separated by commas; an item is a page number N, a range
// A-B (A <= B, both inclusive) or an open range A- (A to the last page).
// Numbers are 1-based; spaces around numbers, '-' and ',' are allowed.
// Rules, each refused with a qvl::Error naming the offending item:
//   - the selection is not empty and has no empty item ("1,,3", "1,");
//   - every number is within 1..page_count;
//   - a range does not run backwards ("5-3");
//   - no page is selected twice ("1-3,2"): a repeated page would cost its
//     image tokens twice and tell the model nothing new.
// Order is kept as written ("7,1-3" renders page 7 first), so a prompt can
// put the pages it is about in the order it talks about them.
std::vector<int> parse_page_selection(std::string_view selection, int page_count);

// Every page, 0 .. page_count-1: what no selection means.
std::vector<int> all_pages(int page_count);

}  // namespace qvl
