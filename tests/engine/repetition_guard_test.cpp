#include "engine/repetition_guard.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace qvl {
namespace {

// Feeds tokens; returns the index of the token that tripped the guard, or -1.
int64_t first_trip(RepetitionGuard& g, const std::vector<int32_t>& tokens) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (g.push(tokens[i])) return static_cast<int64_t>(i);
  return -1;
}

std::vector<int32_t> repeat(const std::vector<int32_t>& block, int times) {
  std::vector<int32_t> out;
  for (int i = 0; i < times; ++i) out.insert(out.end(), block.begin(), block.end());
  return out;
}

std::vector<int32_t> random_tokens(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> out(n);
  for (int32_t& t : out) t = static_cast<int32_t>(rng() % 50000);
  return out;
}

TEST(RepetitionGuard, RepeatedRowStopsWhenTheLoopReachesTheWindow) {
  const std::vector<int32_t> row = random_tokens(30, 1);  // one table row
  std::vector<int32_t> text = random_tokens(57, 2);      // an answer's opening
  const size_t loop_start = text.size();
  const std::vector<int32_t> rows = repeat(row, 40);
  text.insert(text.end(), rows.begin(), rows.end());
  RepetitionGuard g({400, 3});
  const int64_t at = first_trip(g, text);
  // The periodic tail is the first copy of the row plus everything that
  // repeats it; it reaches 400 tokens at loop_start + 399.
  EXPECT_EQ(at, static_cast<int64_t>(loop_start) + 399);
  EXPECT_EQ(g.period(), 30);
  EXPECT_EQ(g.span(), 400);
}

TEST(RepetitionGuard, LongPeriodNeedsMinRepeats) {
  const std::vector<int32_t> block = random_tokens(200, 3);
  RepetitionGuard g({100, 3});
  // Window 100 alone would trip at the 100th repeated token; three periods
  // (600 tokens) are required.
  EXPECT_EQ(first_trip(g, repeat(block, 4)), 599);
  EXPECT_EQ(g.period(), 200);
}

TEST(RepetitionGuard, SingleTokenLoop) {
  RepetitionGuard g({64, 3});
  std::vector<int32_t> text = random_tokens(10, 4);
  text.insert(text.end(), 100, 7);
  EXPECT_EQ(first_trip(g, text), 10 + 63);
  EXPECT_EQ(g.period(), 1);
}

TEST(RepetitionGuard, LegitimatelyRepeatedCellsPass) {
  // A markdown table: a row of 40 equal cells, then numbered rows that share
  // most of their tokens but never repeat exactly, then 8 identical rows.
  const int32_t bar = 1, zero = 2, space = 3, nl = 4, dash = 5;
  std::vector<int32_t> text;
  for (int c = 0; c < 40; ++c) text.insert(text.end(), {bar, space, zero, space});
  text.push_back(nl);
  for (int r = 0; r < 60; ++r) {
    text.insert(text.end(), {bar, space, 100 + r, space, bar, space, dash, space, bar, space, zero, space, bar, nl});
  }
  const std::vector<int32_t> same = {bar, space, dash, space, bar, space, dash, space, bar, nl};
  const std::vector<int32_t> rows = repeat(same, 8);
  text.insert(text.end(), rows.begin(), rows.end());
  RepetitionGuard g({400, 3});
  EXPECT_EQ(first_trip(g, text), -1);
}

TEST(RepetitionGuard, BrokenLoopStartsOver) {
  const std::vector<int32_t> row = random_tokens(25, 5);
  std::vector<int32_t> text = repeat(row, 14);  // 350 periodic tokens
  text.push_back(49999);                        // the model moves on
  const std::vector<int32_t> more = repeat(row, 14);
  text.insert(text.end(), more.begin(), more.end());
  RepetitionGuard g({400, 3});
  EXPECT_EQ(first_trip(g, text), -1);
}

TEST(RepetitionGuard, OffWhenWindowIsZero) {
  RepetitionGuard g({0, 3});
  std::vector<int32_t> text(5000, 9);
  EXPECT_EQ(first_trip(g, text), -1);
}

TEST(RepetitionGuard, PeriodsBeyondTheLimitAreNotWatched) {
  const std::vector<int32_t> block = random_tokens(RepetitionGuard::kMaxPeriod + 1, 6);
  RepetitionGuard g({400, 2});
  EXPECT_EQ(first_trip(g, repeat(block, 3)), -1);
}

TEST(RepetitionGuard, RandomTextNeverTrips) {
  RepetitionGuard g({400, 3});
  // A small vocabulary makes chance matches frequent; none lasts a window.
  std::mt19937 rng(7);
  std::vector<int32_t> text(20000);
  for (int32_t& t : text) t = static_cast<int32_t>(rng() % 4);
  EXPECT_EQ(first_trip(g, text), -1);
}

}  // namespace
}  // namespace qvl
