// The AMX int8 kernel for q8/q4 weights (amx_matmul.h).
//
// One tdpbssd multiplies 16 x rows by one weight block (16 rows) over one
// group of 32: A = the x rows' codes of the group (16 rows × 32 bytes), B =
// the block's codes of the group (8 rows × 64 bytes: quant.h's interleave of
// 4-byte units is exactly tdpbssd's B layout), C = their 16 × 16 exact int32
// sums. Each group's C is stored and scaled into f32 accumulators kept in 16
// zmm registers (lane r of register i: x row i, weight row r), with the VNNI
// kernel's arithmetic (simd_matmul_quant.cpp): f32(sum) · (sw · sx) added by
// one FMA, groups in order. Integer sums are exact, so outputs match that
// kernel bit for bit; the tiles only take over the integer work.
//
// Work is split as in the VNNI GEMM: items of (a panel of 16-row x chunks, a
// tile of weight blocks), each held in L2, claimed one at a time by the
// threads. q4 blocks are widened to signed bytes (code - 8) once per item.
#include "ops/amx_matmul.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "ops/amx_tiles.h"
#include "ops/cpu_features.h"
#include "ops/quant.h"
#include "ops/simd_quant.h"

#if QVL_AMX
#include <immintrin.h>
#endif

// GCC 12 reports the intrinsics' own _mm512_undefined_* placeholders as
// maybe uninitialized once they are inlined into a function with a target
// attribute (GCC bug 105593, fixed in 13); nothing of ours is uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace qvl::amx {

#if QVL_AMX
namespace {

constexpr int64_t kRB = quant::kBlockRows;  // weight rows per block: C's 16 int32 columns
constexpr int64_t kXRows = 16;              // x rows per A and C tile
constexpr int64_t kGroup = quant::kGroup;   // A's bytes per row
constexpr int64_t kBRows = kGroup / 4;      // B's rows (4 bytes of k each)
constexpr int64_t kBTile = kBRows * 64;     // bytes of one (block, group) as int8
static_assert(kRB * 4 == 64 && kGroup == 32);

// Bytes of weights (as int8 B tiles) per item, and of x codes per panel: a
// thread's item stays in L2 (2 MB per core on Sapphire Rapids).
constexpr int64_t kItemBytes = 256 << 10;

// Tiles 0/1: C (int32 sums of one group); 2/3: A (x codes); 4/5: B (weight
// codes). One set for even groups and one for odd, so one group's multiply
// overlaps the scaling of the group before.
TileConfig int8_config() {
  TileConfig c;
  for (int s = 0; s < 2; ++s) c.set(0 + s, kXRows, kRB * 4).set(2 + s, kXRows, kGroup).set(4 + s, kBRows, kRB * 4);
  return c;
}

#define QVL_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,f16c,fma")))

// acc[i] += f32(sums[i][·]) · (sw · sx[i]) for the 16 x rows of one group.
// sx holds the group's 16 x scales side by side, so each is one constant
// offset from one register (an embedded broadcast): with a row stride known
// only at run time GCC kept 16 addresses in zmm registers and spilled the
// accumulators to the stack (perf annotate, q8 GEMM on a Xeon with AMX).
QVL_AVX512 inline void scale_group(const int32_t* sums, const uint16_t* sw16, const float* sx, __m512* acc) {
  const __m512 sw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sw16)));
  for (int i = 0; i < kXRows; ++i)
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(sums + i * kRB)),
                             _mm512_mul_ps(sw, _mm512_set1_ps(sx[i])), acc[i]);
}

// x quantized row by row (quant::XRow), rows padded with zeros to a multiple
// of 16: codes of row i, group g at codes + i·stride + g·32; scales by chunk
// of 16 rows, group-major: row c·16 + j, group g at scales[(c·groups + g)·16 + j].
struct XCodes {
  const int8_t* codes;
  const float* scales;
  int64_t stride, groups;
};

// C tile `C` = the 16 x rows' codes of group g (A tile `A`) times the
// block's codes of group g (B tile `B`).
template <int C, int A, int B, class Tiles>
void multiply_group(Tiles& t, const int8_t* xc, int64_t x_stride, const int8_t* w, int64_t g) {
  t.template load<A>(xc + g * kGroup, x_stride);
  t.template load<B>(w + g * kBTile, 64);
  t.template zero<C>();
  t.template dpbssd<C, A, B>();
}

// out [16 x rows][16 weight rows] for the x rows from `row` and one block:
// its B tiles at w + g·kBTile, its scales at sw + g·16. Software-pipelined
// one group ahead: the unit multiplies group g + 1 (into the other C tile)
// while AVX-512 scales group g. Issued after the scaling, each tilestored
// waited for its own tdpbssd (perf annotate on a Xeon with AMX: the threads
// sat in tilestored); three groups ahead over four C tiles was no faster.
template <class Tiles>
QVL_AVX512 void block_times_rows(Tiles& t, const XCodes& x, int64_t row, const int8_t* w, const uint16_t* sw,
                                 float* out) {
  const int64_t G = x.groups;
  const int8_t* xc = x.codes + row * x.stride;
  const float* xs = x.scales + row * G;  // row is a chunk's first: (row / 16)·G·16
  __m512 acc[kXRows];
  for (auto& a : acc) a = _mm512_setzero_ps();
  alignas(64) int32_t sums[2][kXRows * kRB];
  multiply_group<0, 2, 4>(t, xc, x.stride, w, 0);
  for (int64_t g = 0; g < G; g += 2) {
    if (g + 1 < G) multiply_group<1, 3, 5>(t, xc, x.stride, w, g + 1);
    t.template store<0>(sums[0], 64);
    scale_group(sums[0], sw + g * kRB, xs + g * kXRows, acc);
    if (g + 1 < G) {
      if (g + 2 < G) multiply_group<0, 2, 4>(t, xc, x.stride, w, g + 2);
      t.template store<1>(sums[1], 64);
      scale_group(sums[1], sw + (g + 1) * kRB, xs + (g + 1) * kXRows, acc);
    }
  }
  for (int i = 0; i < kXRows; ++i) _mm512_storeu_ps(out + i * kRB, acc[i]);
}

// q4 blocks [b0, b1) widened to B tiles of signed bytes, code - 8: unit t's
// low nibbles are k positions 4t..4t+3 (B row t), its high nibbles 16 + 4t..
// (B row t + 4), as the VNNI kernel reads them.
QVL_AVX512 void widen_q4(const quant::View& v, int64_t b0, int64_t b1, int8_t* out) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), eight = _mm512_set1_epi8(8);
  const uint8_t* src = v.codes + b0 * v.groups * v.block_group_bytes();
  for (int64_t bg = 0; bg < (b1 - b0) * v.groups; ++bg, src += v.block_group_bytes(), out += kBTile)
    for (int t = 0; t < 4; ++t) {
      const __m512i raw = _mm512_loadu_si512(src + t * 64);
      _mm512_storeu_si512(out + t * 64, _mm512_sub_epi8(_mm512_and_si512(raw, low4), eight));
      _mm512_storeu_si512(out + (t + 4) * 64,
                         _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(raw, 4), low4), eight));
    }
}

template <class Tiles>
void matmul_quant_tiles(const simd::MatmulArgs& a, ThreadPool& pool) {
  const int64_t k = a.w->cols(), n = a.w->rows(), m = a.m;
  const quant::View v = quant::view(*a.w);
  const int64_t G = v.groups, blocks = quant::row_blocks(n);
  const int64_t chunks = (m + kXRows - 1) / kXRows, padded = chunks * kXRows;
  // Row stride 64 bytes past whole groups, so x rows do not all share L1 sets.
  const int64_t stride = G * kGroup + 64;
  // The calling thread's scratch, kept across calls as the VNNI kernel keeps
  // its own (fresh pages each call would be faulted in and cleared). Every
  // element the tiles read is written: rows past m as zeros.
  thread_local std::vector<int8_t> codes_buf;
  thread_local std::vector<float> scales_buf;
  codes_buf.resize(static_cast<size_t>(padded * stride));
  scales_buf.resize(static_cast<size_t>(padded * G));
  int8_t* codes = codes_buf.data();  // the caller's: in the lambda, a thread_local name is the worker's own
  float* scales = scales_buf.data();
  pool.parallel_for(padded, [&](int64_t i0, int64_t i1, int) {
    std::vector<int32_t> sums(static_cast<size_t>(G));  // Σ codes: unused, signed B needs no offset
    std::vector<float> row_scales(static_cast<size_t>(G));
    for (int64_t i = i0; i < i1; ++i) {
      if (i < m) {
        simd::quantize_x(a.x + i * a.ldx, k, {codes + i * stride, row_scales.data(), sums.data()});
      } else {
        std::memset(codes + i * stride, 0, static_cast<size_t>(G * kGroup));
        std::fill(row_scales.begin(), row_scales.end(), 0.0f);
      }
      float* chunk_scales = scales + i / kXRows * G * kXRows + i % kXRows;
      for (int64_t g = 0; g < G; ++g) chunk_scales[g * kXRows] = row_scales[static_cast<size_t>(g)];
    }
  });
  const XCodes x{codes, scales, stride, G};

  const int64_t tile = std::clamp<int64_t>(kItemBytes / (G * kBTile), 1, 16);  // blocks per item
  const int64_t tiles = (blocks + tile - 1) / tile;
  const int64_t panel = std::max<int64_t>(1, kItemBytes / (kXRows * stride));  // chunks per item
  const int64_t items = (chunks + panel - 1) / panel * tiles;
  const TileConfig config = int8_config();
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
    Tiles t(config);
    std::vector<int8_t> widened;
    alignas(64) float out[kXRows * kRB];
    for (int64_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const int64_t b0 = item % tiles * tile, b1 = std::min(blocks, b0 + tile);
      const int64_t c0 = item / tiles * panel, c1 = std::min(chunks, c0 + panel);
      const int8_t* wb = reinterpret_cast<const int8_t*>(v.codes) + b0 * G * kBTile;  // q8: as stored
      if (!v.q8) {
        widened.resize(static_cast<size_t>((b1 - b0) * G * kBTile));
        widen_q4(v, b0, b1, widened.data());
        wb = widened.data();
      }
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t b = b0; b < b1; ++b) {
          block_times_rows(t, x, c * kXRows, wb + (b - b0) * G * kBTile, v.scales + b * G * kRB, out);
          const int64_t rows = std::min(kXRows, m - c * kXRows), cols = std::min(kRB, n - b * kRB);
          for (int64_t i = 0; i < rows; ++i) {
            float* y = a.y + (c * kXRows + i) * a.ldy + b * kRB;
            for (int64_t r = 0; r < cols; ++r) y[r] = out[i * kRB + r] + (a.bias ? a.bias[b * kRB + r] : 0.0f);
          }
        }
    }
  });
}

// A q8 and a q4 product with odd sizes (3 x chunks, the last partial; n not a
// multiple of 16; k not of 32, an odd number of groups), on the unit and
// emulated: equal bit for bit, or the unit is not used.
bool unit_matches_emulation() {
  const int64_t m = 37, n = 40, k = 200;
  std::vector<uint16_t> w(static_cast<size_t>(n * k));
  std::vector<float> x(static_cast<size_t>(m * k)), bias(static_cast<size_t>(n));
  uint32_t s = 12345;
  auto next = [&] { return (s = s * 1664525u + 1013904223u) >> 8; };
  for (auto& e : w) e = static_cast<uint16_t>(0x3c00 | (next() & 0x83ff));  // bf16 in ±[2^-7, 2)
  for (auto& e : x) e = static_cast<float>(next() % 2001) / 1000.0f - 1.0f;
  for (auto& e : bias) e = static_cast<float>(next() % 101) / 100.0f;
  ThreadPool one(1);
  for (WeightFormat f : {WeightFormat::Q8, WeightFormat::Q4}) {
    const WeightMatrix wm = WeightMatrix::from_bf16(w.data(), n, k, f);
    std::vector<float> unit(static_cast<size_t>(m * n)), emulated(unit.size());
    matmul_quant_tiles<AmxTiles>({x.data(), m, k, &wm, bias.data(), unit.data(), n}, one);
    matmul_quant_tiles<EmulatedTiles>({x.data(), m, k, &wm, bias.data(), emulated.data(), n}, one);
    if (std::memcmp(unit.data(), emulated.data(), unit.size() * sizeof(float)) != 0) return false;
  }
  return true;
}

}  // namespace

const char* int8_status() {
  static const char* const status = [] {
    const CpuFeatures& f = cpu_features();
    if (!f.amx_int8) return "no AMX-INT8 on this CPU";
    if (!f.avx512) return "no AVX-512 on this CPU";
    if (!amx_tile_state_granted()) return "tile state not granted by Linux";
    if (!unit_matches_emulation()) return "the unit disagreed with its emulation";
    return "used";
  }();
  return status;
}

bool int8_usable() {
  static const bool used = std::strcmp(int8_status(), "used") == 0;
  return used;
}

void matmul_quant(const simd::MatmulArgs& a, ThreadPool& pool) {
  if (!int8_usable()) fail("matmul: the AMX int8 kernel is not usable on this machine");
  matmul_quant_tiles<AmxTiles>(a, pool);
}

void matmul_quant_emulated(const simd::MatmulArgs& a, ThreadPool& pool) {
  if (!cpu_features().avx512) fail("matmul: the emulated AMX kernel needs AVX-512");
  matmul_quant_tiles<EmulatedTiles>(a, pool);
}

#else  // not x86-64

const char* int8_status() { return "not an x86-64 build"; }
bool int8_usable() { return false; }
void matmul_quant(const simd::MatmulArgs&, ThreadPool&) { fail("matmul: AMX is x86-64 only"); }
void matmul_quant_emulated(const simd::MatmulArgs&, ThreadPool&) { fail("matmul: AMX is x86-64 only"); }

#endif

}  // namespace qvl::amx
