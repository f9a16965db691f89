// HttpHeaders: case-insensitive names (RFC 9110 §5.1), set replaces, erase removes all.
#include "http/http_message.h"

#include <gtest/gtest.h>

namespace qvl {
namespace {

TEST(HttpHeaders, NamesAreCaseInsensitive) {
  HttpHeaders h;
  h.add("Content-Type", "a");
  h.add("content-type", "b");
  EXPECT_EQ(h.get("CONTENT-TYPE"), "a");
  EXPECT_EQ(h.count("Content-type"), 2u);
  h.set("CONTENT-TYPE", "c");
  EXPECT_EQ(h.count("content-type"), 1u);
  EXPECT_EQ(h.get("content-type"), "c");
  h.erase("Content-Type");
  EXPECT_FALSE(h.has("content-type"));
  const std::string fallback = "x";
  EXPECT_EQ(h.get("missing", fallback), "x");
}

}  // namespace
}  // namespace qvl
