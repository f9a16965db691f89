#include "video/decode_plan.h"

#include <algorithm>
#include <numeric>

namespace qvl::video_detail {

std::optional<DecodePlan> plan_sampled_decode(const PacketTable& table, std::span<const int64_t> frame_indices,
                                              int64_t total_frames) {
  const std::vector<PacketEntry>& p = table.packets;
  const auto n = static_cast<int64_t>(p.size());
  if (!table.one_frame_per_packet || table.read_error != 0 || table.over_limit || n != total_frames || n == 0)
    return std::nullopt;
  // shown[k]: the decode position of the k-th frame shown.
  std::vector<int64_t> shown(static_cast<size_t>(n));
  std::iota(shown.begin(), shown.end(), int64_t{0});
  std::sort(shown.begin(), shown.end(), [&](int64_t a, int64_t b) { return p[a].pts < p[b].pts; });
  DecodePlan plan;
  plan.shown_pts.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    plan.shown_pts[k] = p[shown[k]].pts;
    if (k > 0 && plan.shown_pts[k] == plan.shown_pts[k - 1]) return std::nullopt;
  }

  std::vector<int64_t> clean;  // decode positions of the clean starts
  for (int64_t i = 0; i < n; ++i)
    if (p[i].clean_start) clean.push_back(i);
  plan.sampled.assign(static_cast<size_t>(n), false);
  std::vector<DecodeRun> wanted;
  for (const int64_t k : frame_indices) {
    if (k < 0 || k >= n) return std::nullopt;
    const int64_t at = shown[k];
    plan.sampled[at] = true;
    plan.sample_pts.push_back(p[at].pts);
    // The last clean start decoded before the frame and not shown after it
    // (an open GOP's leading pictures need the group before): from there
    // the frame decodes as in a decode of everything. Failing that, the
    // stream's first packet, where a decode of everything starts too.
    auto c = std::upper_bound(clean.begin(), clean.end(), at);
    while (c != clean.begin() && p[*std::prev(c)].pts > p[at].pts) --c;
    wanted.push_back({c == clean.begin() ? 0 : *std::prev(c), at, false});
  }
  std::sort(wanted.begin(), wanted.end(), [](const DecodeRun& a, const DecodeRun& b) { return a.first < b.first; });
  for (const DecodeRun& w : wanted) {
    if (!plan.runs.empty() && w.first <= plan.runs.back().last + 1) {
      plan.runs.back().last = std::max(plan.runs.back().last, w.last);
      continue;
    }
    const int64_t gap_begin = plan.runs.empty() ? 0 : plan.runs.back().last + 1;
    // A clean start strictly inside the gap: from it to `first` is at least
    // one whole group of pictures.
    const auto inside = std::lower_bound(clean.begin(), clean.end(), gap_begin);
    plan.runs.push_back({w.first, w.last, inside != clean.end() && *inside < w.first});
  }
  return plan;
}

}  // namespace qvl::video_detail
