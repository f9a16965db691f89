// Internal: the AMX tile instructions qvl uses, twice over. AmxTiles issues
// them; EmulatedTiles computes them in scalar code, with the shape checks the
// hardware makes (where it raises #UD, the emulation throws). Kernels are
// templates over one of the two, so a kernel's blocking, layout and scaling
// are tested on every CPU with AVX-512, and the tile instructions themselves
// where AMX runs (amx_matmul.h).
//
// Semantics: Intel SDM vol. 1 ch. 3.3 (tiles, palette 1: 8 tiles of up to 16
// rows × 64 bytes) and vol. 2 (LDTILECFG, TILELOADD, TILESTORED, TILEZERO,
// TDPBSSD, TDPBF16PS). A tile holds `rows` rows of `colsb` bytes, set per tile by the
// configuration; TDPBSSD C += A·B multiplies A [M rows][K·4 int8] by B
// [K rows][N·4 int8] ("VNNI layout": B row k holds, for each output column
// n, the 4 bytes of k positions 4k..4k+3) into C [M][N int32], and needs
// rows(B) = colsb(A)/4, colsb(B) = colsb(C), rows(C) = rows(A).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ops/scalar.h"
#include "util/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QVL_AMX 1
#else
#define QVL_AMX 0
#endif

namespace qvl::amx {

// The 64-byte LDTILECFG operand (SDM vol. 1 3.3.2.1): byte 0 the palette,
// byte 1 the start row (0), bytes 16-47 each tile's bytes per row (uint16),
// bytes 48-63 each tile's rows. Unused tiles stay 0 (unconfigured).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};

  TileConfig& set(int tile, int tile_rows, int bytes_per_row) {
    rows[tile] = static_cast<uint8_t>(tile_rows);
    colsb[tile] = static_cast<uint16_t>(bytes_per_row);
    return *this;
  }
};
static_assert(sizeof(TileConfig) == 64);

constexpr int kTiles = 8, kMaxRows = 16, kMaxBytes = 64;

#if QVL_AMX
// The tile unit, in inline assembly rather than GCC's intrinsics: those name
// the tile by stringizing their argument (no template parameter can be
// passed) and their tileloadd does not tell the compiler it reads memory, so
// a buffer just written (q4 widened to bytes) could be read before its
// stores. Here every load and store clobbers memory, and `%c` prints a
// tile number given as a constant. AT&T operand order: source 2, source 1,
// destination.
// Construction loads the configuration on the calling thread (a thread must,
// before its first tile instruction); destruction releases the tile state,
// so a context switch does not save 8 KB of tile data for a thread done
// with it.
class AmxTiles {
 public:
  explicit AmxTiles(const TileConfig& config) { __asm__ volatile("ldtilecfg %0" ::"m"(config)); }
  ~AmxTiles() { __asm__ volatile("tilerelease" ::: "memory"); }
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;

  template <int T>
  void zero() {
    __asm__ volatile("tilezero %%tmm%c0" ::"i"(T));
  }
  template <int T>
  void load(const void* base, int64_t stride) {
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(base), "r"(stride), "i"(T) : "memory");
  }
  template <int T>
  void store(void* base, int64_t stride) {
    __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(base), "r"(stride), "i"(T) : "memory");
  }
  template <int C, int A, int B>
  void dpbssd() {
    __asm__ volatile("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
  }
  template <int C, int A, int B>
  void dpbf16ps() {
    __asm__ volatile("tdpbf16ps %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
  }
};
#endif

// A float as tdpbf16ps inputs. parts 1 (Fast): rounded to nearest even
// (scalar::round_bf16, as the vdpbf16ps kernel rounds). parts 3 (Exact):
// cut by truncation into hi = v's top 8 significand bits, mid = the next 8
// of v - hi, lo = the rest, which sum to v exactly (v has 24).
inline void split_bf16(float v, int parts, uint16_t* out) {
  if (parts == 1) {
    out[0] = scalar::round_bf16(v);
    return;
  }
  for (int p = 0; p < 3; ++p) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    out[p] = static_cast<uint16_t>(bits >> 16);
    bits &= 0xffff0000u;
    float head;
    std::memcpy(&head, &bits, 4);
    v -= head;  // exact: head is v's leading bits
  }
}

// How far the unit's outputs stray from their emulation, as a multiple of
// each output's allowed difference bound[i] (at most 1: they agree). The
// unit adds in an order of its own: the SDM's pseudocode for TDPBF16PS has
// been pair by pair in k order, and in later editions even and odd products
// summed apart and added at the end. Two correct results then differ by
// f32 summation error, which the bounds cover whatever the order; a wrong
// operand or a lost product costs orders more.
inline double excess_over_emulation(const std::vector<float>& unit, const std::vector<float>& emulated,
                                    const std::vector<double>& bound) {
  double worst = 0;
  for (size_t i = 0; i < unit.size(); ++i) {
    const double diff = std::fabs(double(unit[i]) - emulated[i]);
    worst = std::max(worst, std::isnan(diff) ? HUGE_VAL : diff / bound[i]);
  }
  return worst;
}

// A bf16 self-check's verdict, for a *_status() string.
inline std::string verdict_on_unit(double excess) {
  if (excess <= 1) return "used";
  return cat("the unit disagreed with its emulation (", excess, "x the f32 rounding bound)");
}

// The order EmulatedTiles adds a TDPBF16PS's products in. The SDM's
// pseudocode has given two: pair by pair in k order (PairByPair, the twin the
// kernels are tested with), and in later editions even and odd products
// summed apart from zero, the two sums then added to C (EvenOdd). A unit may
// add in either or in its own, so it is compared within f32 rounding bounds.
// LosesAProduct is a faulty unit (each instruction drops its last product),
// for the tests that the self-checks reject one.
enum class Bf16Order { PairByPair, EvenOdd, LosesAProduct };

// The same instructions in scalar code: the twin the AMX kernels are tested
// against on CPUs without AMX.
template <Bf16Order kOrder>
class EmulatedTilesIn {
 public:
  explicit EmulatedTilesIn(const TileConfig& config) : config_(config) {
    if (config.palette != 1 || config.start_row != 0) fail("tile config: palette ", int(config.palette), " unsupported");
    // LDTILECFG raises #GP for reserved bytes or tiles 8-15 set, and for a
    // tile with rows but no bytes or bytes but no rows (SDM vol. 2).
    for (uint8_t b : config.reserved)
      if (b != 0) fail("tile config: reserved bytes set");
    for (int t = 0; t < 16; ++t) {
      const bool bad = t < kTiles ? config.rows[t] > kMaxRows || config.colsb[t] > kMaxBytes ||
                                        config.colsb[t] % 4 != 0 || (config.rows[t] == 0) != (config.colsb[t] == 0)
                                  : config.rows[t] != 0 || config.colsb[t] != 0;
      if (bad) fail("tile config: tile ", t, " is ", int(config.rows[t]), " x ", config.colsb[t], " bytes");
    }
    std::memset(data_, 0, sizeof data_);
  }

  template <int T>
  void zero() {
    used(T);
    std::memset(data_[T], 0, sizeof data_[T]);
  }
  // Rows past the configured ones, and bytes past colsb, read as zero.
  template <int T>
  void load(const void* base, int64_t stride) {
    used(T);
    std::memset(data_[T], 0, sizeof data_[T]);
    for (int r = 0; r < config_.rows[T]; ++r)
      std::memcpy(data_[T][r], static_cast<const uint8_t*>(base) + r * stride, config_.colsb[T]);
  }
  template <int T>
  void store(void* base, int64_t stride) const {
    used(T);
    for (int r = 0; r < config_.rows[T]; ++r)
      std::memcpy(static_cast<uint8_t*>(base) + r * stride, data_[T][r], config_.colsb[T]);
  }
  template <int C, int A, int B>
  void dpbssd() {
    const auto [m, k4, n] = dot_shape("tdpbssd", C, A, B);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        int32_t sum;
        std::memcpy(&sum, &data_[C][i][4 * j], 4);
        for (int kk = 0; kk < k4; ++kk)
          for (int b = 0; b < 4; ++b)
            sum += int32_t(int8_t(data_[A][i][4 * kk + b])) * int32_t(int8_t(data_[B][kk][4 * j + b]));
        std::memcpy(&data_[C][i][4 * j], &sum, 4);
      }
  }
  // TDPBF16PS (SDM vol. 2): C [M][N f32] += A [M][K pairs of bf16] · B [K
  // rows][N pairs], the products added in kOrder; bf16 inputs with a zero
  // exponent read as zero (DAZ), f32 results below the smallest normal flush
  // to zero (FTZ), rounding to nearest even. Each product of two bf16 is
  // exact in f32. The unit may order its additions otherwise: compare with a
  // tolerance, not bit for bit.
  template <int C, int A, int B>
  void dpbf16ps() {
    const auto [m, k4, n] = dot_shape("tdpbf16ps", C, A, B);
    auto bf16 = [](const uint8_t* p) {
      uint32_t bits = (uint32_t(p[1]) << 24) | (uint32_t(p[0]) << 16);
      if ((bits & 0x7f800000u) == 0) bits &= 0x80000000u;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    };
    auto ftz = [](float f) { return f != 0 && f > -1.17549435e-38f && f < 1.17549435e-38f ? 0.0f * f : f; };
    auto product = [&](int i, int j, int kk, int h) {
      return bf16(&data_[A][i][4 * kk + 2 * h]) * bf16(&data_[B][kk][4 * j + 2 * h]);
    };
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        float acc;
        std::memcpy(&acc, &data_[C][i][4 * j], 4);
        if constexpr (kOrder == Bf16Order::EvenOdd) {
          float even = 0, odd = 0;
          for (int kk = 0; kk < k4; ++kk) {
            even = ftz(even + product(i, j, kk, 0));
            odd = ftz(odd + product(i, j, kk, 1));
          }
          acc = ftz(acc + ftz(even + odd));
        } else {
          for (int kk = 0; kk < k4; ++kk)
            for (int h = 0; h < 2; ++h)
              if (kOrder != Bf16Order::LosesAProduct || kk + 1 < k4 || h == 0) acc = ftz(acc + product(i, j, kk, h));
        }
        std::memcpy(&data_[C][i][4 * j], &acc, 4);
      }
  }

 private:
  void used(int t) const {
    if (config_.rows[t] == 0 || config_.colsb[t] == 0) fail("tile ", t, " used but not configured");
  }
  // C [m][n dwords] += A [m][k4 dwords] · B [k4][n dwords]: the shapes every
  // tile dot product requires.
  struct DotShape {
    int m, k4, n;
  };
  DotShape dot_shape(const char* instruction, int c, int a, int b) const {
    used(c), used(a), used(b);
    // #UD when two operands name the same tile (SDM vol. 2, exception class AMX-E4).
    if (c == a || c == b || a == b) fail(instruction, ": tiles ", c, ", ", a, ", ", b, " are not distinct");
    const DotShape s{config_.rows[a], config_.colsb[a] / 4, config_.colsb[c] / 4};
    if (config_.rows[b] != s.k4 || config_.colsb[b] != config_.colsb[c] || config_.rows[c] != s.m)
      fail(instruction, ": tiles ", c, ", ", a, ", ", b, " have mismatched shapes");
    return s;
  }

  TileConfig config_;
  uint8_t data_[kTiles][kMaxRows][kMaxBytes];
};
using EmulatedTiles = EmulatedTilesIn<Bf16Order::PairByPair>;

// f.template operator()<EmulatedTilesIn<order>>() for an order chosen at run time.
template <class F>
decltype(auto) with_emulated_order(Bf16Order order, F&& f) {
  switch (order) {
    case Bf16Order::EvenOdd: return f.template operator()<EmulatedTilesIn<Bf16Order::EvenOdd>>();
    case Bf16Order::LosesAProduct: return f.template operator()<EmulatedTilesIn<Bf16Order::LosesAProduct>>();
    default: return f.template operator()<EmulatedTilesIn<Bf16Order::PairByPair>>();
  }
}

}  // namespace qvl::amx
