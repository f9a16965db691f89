// Internal: the Highway matmul kernels, reached through matmul() (matmul.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/matmul.h"

namespace qvl::simd {

struct MatmulArgs {
  const float* x;  // [m, ldx]
  int64_t m, ldx;
  const WeightMatrix* w;
  const float* bias;  // [n] or null
  float* y;           // [m, ldy]
  int64_t ldy;
};

// m <= kSmallM: every weight row is read once and applied to all m rows of x
// (decode; memory-bound). The outputs share x, one format and k (matmul_each);
// x is prepared once and their rows are cut into pieces the threads claim
// (work_pieces.h).
constexpr int64_t kSmallM = 8;
void matmul_small_m(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs, ThreadPool& pool);
// The same for products each with its own x of 1..kSmallM rows (matmul_many):
// one format and k, every x prepared once, all rows in one parallel step.
void matmul_small_m_tasks(std::span<const MatmulTask> tasks, ThreadPool& pool);
// Where each task's x starts among the rows the small-m kernels prepare: a
// task with the same x, m and ldx as the one before it shares that one's
// rows. `rows` receives their total.
std::vector<int64_t> task_x_rows(std::span<const MatmulTask> tasks, int64_t& rows);
// Larger m: register-blocked outer-product tiles (prefill; compute-bound).
void matmul_gemm(const MatmulArgs& a, ThreadPool& pool);
// Both forward q8/q4 weights to this (simd_matmul_quant.cpp): integer dot
// products on x rounded to 8 bits per group, every m.
void matmul_quant(const MatmulArgs& a, ThreadPool& pool);
// Products of one x by q8/q4 weights sharing one format and k, every m:
// x is rounded once for all of them (matmul_each).
void matmul_quant_each(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs, ThreadPool& pool);
void matmul_quant_small_m(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs,
                          ThreadPool& pool);
void matmul_quant_small_m_tasks(std::span<const MatmulTask> tasks, ThreadPool& pool);
// Whether matmul_quant runs m > kSmallM rows on the AMX int8 kernel
// (amx_matmul.h) here.
bool matmul_quant_gemm_on_amx();
// AArch64: the instruction the q8/q4 kernels form their integer sums with
// for m rows of x ("SDOT", "SMMLA"; neon_matmul_quant.h), or null where they
// use none of these (other architectures, the portable target, a CPU without
// the dot product).
const char* matmul_quant_arm_instruction(int64_t m);
// The dispatched target's name (that of matmul_quant, the only matmul file
// that compiles AVX3_DL).
const char* matmul_target();
// What matmul_quant's dispatched target multiplies on: vpdpbusd
// (AVX512-VNNI targets), vpmaddubsw (other x86 AVX2 and better) or portable
// code, and the unit whose peak that is measured against.
struct QuantInstruction {
  const char* name;
  MatmulUnit unit;
};
QuantInstruction matmul_quant_instruction();

}  // namespace qvl::simd
