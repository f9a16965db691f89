// parse_page_selection: the accepted forms, order kept as written, and every
// refusal naming the piece that is wrong.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pdf/page_selection.h"
#include "util/error.h"

namespace {

using qvl::parse_page_selection;
using V = std::vector<int>;

std::string error_of(const std::string& s, int pages) {
  try {
    parse_page_selection(s, pages);
  } catch (const qvl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PageSelection, SinglesRangesAndOpenRangesAreZeroBased) {
  EXPECT_EQ(parse_page_selection("1", 5), V({0}));
  EXPECT_EQ(parse_page_selection("1-3,5", 5), V({0, 1, 2, 4}));
  EXPECT_EQ(parse_page_selection("4-", 5), V({3, 4}));
  EXPECT_EQ(parse_page_selection("2-2", 5), V({1}));
  EXPECT_EQ(parse_page_selection(" 1 - 2 , 4 ", 5), V({0, 1, 3}));
}

TEST(PageSelection, OrderIsKeptAsWritten) {
  EXPECT_EQ(parse_page_selection("7,1-3", 7), V({6, 0, 1, 2}));
}

TEST(PageSelection, AllPagesIsEveryIndex) { EXPECT_EQ(qvl::all_pages(3), V({0, 1, 2})); }

TEST(PageSelection, RefusalsNameTheBadPiece) {
  EXPECT_EQ(error_of("", 3), "the page selection is empty (expected pages like 1-3,7)");
  EXPECT_EQ(error_of("  ", 3), "the page selection is empty (expected pages like 1-3,7)");
  EXPECT_EQ(error_of("1,,3", 3), "page selection '1,,3': item 2 is empty");
  EXPECT_EQ(error_of("1,", 3), "page selection '1,': item 2 is empty");
  EXPECT_EQ(error_of("1-3,x", 3),
            "page selection '1-3,x': 'x' is not a page number or a range of pages (like 1-3,7 or 5-)");
  EXPECT_EQ(error_of("-2", 3), "page selection '-2': '-2' is not a page number or a range of pages (like 1-3,7 or 5-)");
  EXPECT_EQ(error_of("1-2-3", 3),
            "page selection '1-2-3': '1-2-3' is not a page number or a range of pages (like 1-3,7 or 5-)");
  EXPECT_EQ(error_of("+1", 3), "page selection '+1': '+1' is not a page number or a range of pages (like 1-3,7 or 5-)");
  EXPECT_EQ(error_of("0-2", 3), "page selection '0-2': page 0 in '0-2' does not exist (pages are numbered from 1)");
  EXPECT_EQ(error_of("2,9", 4), "page selection '2,9': page 9 in '9' is past the end (the document has 4 pages)");
  EXPECT_EQ(error_of("2", 1), "page selection '2': page 2 in '2' is past the end (the document has 1 page)");
  EXPECT_EQ(error_of("99999999999999999999999", 4),
            "page selection '99999999999999999999999': page 99999999999999999999999 in '99999999999999999999999' is past the "
            "end (the document has 4 pages)");
  EXPECT_EQ(error_of("5-3", 9), "page selection '5-3': the range '5-3' runs backwards");
  EXPECT_EQ(error_of("1-3, 2", 9), "page selection '1-3, 2': page 2 is selected twice ('1-3' and '2')");
  EXPECT_EQ(error_of("4,4", 9), "page selection '4,4': page 4 is selected twice ('4' and '4')");
}

TEST(PageSelection, ALongSelectionIsQuotedShort) {
  const std::string e = error_of("x" + std::string(1000, '1'), 3);
  EXPECT_EQ(e.rfind("page selection 'x" + std::string(59, '1') + "...': 'x111", 0), 0u) << e;
  EXPECT_LT(e.size(), 1200u);  // the item itself is quoted whole: it is the piece to fix
}

}  // namespace
