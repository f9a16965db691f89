// Internal: matmul kernels on the AMX tile unit, reached through matmul()
// for m > simd::kSmallM rows (prefill, vision). Each is a template over the
// tile instructions (amx_tiles.h), run on the unit or emulated.
#pragma once

#include "ops/amx_tiles.h"
#include "ops/simd_matmul.h"

namespace qvl::amx {

// Whether the int8 kernel runs on this machine: the CPU has AMX-INT8 and
// AVX-512 (which scales the tiles' integer sums), Linux grants the tile
// state (amx_tile_state_granted), and a first product on the unit matched its
// emulation bit for bit (once per process). Where any of that fails, the
// AVX-512 kernels run instead.
bool int8_usable();
// "used", or why not: "no AMX-INT8 on this CPU", "no AVX-512 on this CPU",
// "tile state not granted by Linux", "the unit disagreed with its emulation"
// (qvl bench reports it, so a machine with AMX that runs without says why).
const char* int8_status();

// y = x·Wᵀ for q8/q4 W (quant.h), m > 0: the same integer dot products as
// simd::matmul_quant, per x row and group of 32 (tdpbssd: x codes times the
// signed weight codes), each converted to f32, scaled by sw·sx and added in
// group order with one FMA, so every output is bit-identical to the AVX-512
// and AVX2 kernels. The q8 codes are loaded as tiles as stored (quant.h's
// interleave is tdpbssd's B layout); q4 is widened to bytes per tile of
// weight blocks, once per work item and reused for the item's x rows.
// matmul_quant needs int8_usable(); matmul_quant_emulated runs the same
// kernel with the tile instructions in scalar code (needs AVX-512 only).
void matmul_quant(const simd::MatmulArgs& a, ThreadPool& pool);
void matmul_quant_emulated(const simd::MatmulArgs& a, ThreadPool& pool);

// Whether the bf16 kernel runs here: the CPU has AMX-BF16, Linux grants the
// tile state, and a first fast and exact product on the unit agreed with its
// emulation to f32 summation error (the unit may add in its own order).
bool bf16_usable();
const char* bf16_status();  // as int8_status
// That check with the unit emulated adding in `unit_order`: the worst
// difference as a multiple of its bound (above 1: the unit is not used).
// For tests: any order within f32 rounding must pass, a faulty unit fail.
double bf16_check_excess(Bf16Order unit_order);

// y = x·Wᵀ for bf16 W, m > 0, with tdpbf16ps; by the matrix's precision
// (matmul.h). Fast: x rounded to bf16 as the vdpbf16ps kernel rounds it.
// Exact: x cut into three bf16 parts that sum to it exactly, each part's
// products exact in f32 and summed in f32: the exact contract, with a third
// of the unit's rate. Each output depends on its own x row alone, so rows
// are bit-identical whatever m.
void gemm_bf16(const simd::MatmulArgs& a, ThreadPool& pool);
void gemm_bf16_emulated(const simd::MatmulArgs& a, ThreadPool& pool);

}  // namespace qvl::amx
