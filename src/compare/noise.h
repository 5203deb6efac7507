// Noise-aware judgement of an entry: is the difference at its outputs explained by the difference
// already at its inputs plus the rounding noise of its dtype? (docs/compare.md, "First divergence")
#pragma once

#include "numprobe/compare/rows.h"

namespace numprobe {

// Scale-free difference of one matched row pair, from the dumped statistics: the largest of
// |dMax| and |dMin| over the tensor's magnitude, |dMean| over its RMS, |dNorm| over its norm.
// 0 when identical or for a non-tensor argument against null (not recorded); +inf when the kinds,
// shapes or non-finite values disagree, or scalars differ.
// Mean/Norm differences that summation alone explains, with Max and Min equal, count as none:
// between a side summed in fp32 (its Mean and Norm are float32 values: msprobe) and one summed in
// float64 (numprobe), sqrt(n) fp32 ulps for a tensor of n elements (msprobe's Norm of a
// 1.18M-element weight is 1.3e-5 relative off the float64 one; the bound is 1.3e-4); between two
// fp32 sums kStatisticsPrecision; between two float64 sums kFloat64SumPrecision.
double row_discrepancy(const CompareRow& target, const CompareRow& golden);

// row_discrepancy's two halves: the extremes (|dMax|, |dMin| over the magnitude) and the sums
// (|dMean| over the RMS, |dNorm| over the norm, after the summation allowance). Another CPU's
// initialiser moves a few elements by a few ulps: the extremes by that much, the sums by far less
// (the moves have either sign); a weight row scaled by 1e-4 moves the sums and not the extremes.
struct RowDiscrepancy {
  double extremes = 0, sums = 0;
  // What summation alone explains in `sums` (an fp32 against a float64 sum: msprobe against
  // numprobe), counted as none only while the extremes agree.
  double summation = 0;
};
RowDiscrepancy row_discrepancy_parts(const CompareRow& target, const CompareRow& golden);

// Relative difference of a Mean or Norm that summation order alone explains: 4 fp32 ulps between
// two fp32 sums, 1e-12 between two float64 sums (numprobe splits large tensors over threads).
inline constexpr double kStatisticsPrecision = 4.0 / (1 << 23);
inline constexpr double kFloat64SumPrecision = 1e-12;

// The relative difference that rounding alone can produce for an op computing in `dtype`: the
// TF32/fp16 noise floor 2^-10 (fp32 matmuls and convolutions run in TF32/HF32 on current GPUs and
// NPUs; msprobe's own "one thousandth" rule), or 8 ulps of the dtype where that is coarser.
double noise_tolerance(DType dtype);

// How much an op may amplify the relative difference of its inputs before its outputs count as
// diverging by themselves.
inline constexpr double kNoiseAmplification = 16.0;

// How far an elementwise op with bitwise-equal inputs may differ between CPU generations, in ulps
// of its dtype: vectorised transcendental functions (erf, exp, tanh) round an element otherwise by
// about one ulp between AVX2 and AVX-512 kernels.
inline constexpr double kVectorMathUlps = 4.0;

// The floor of an op in a mixed-precision pair, in units of the low dtype's epsilon: its operands
// and its result each rounded once to bf16/fp16 (half an epsilon each, relative to the extremes).
inline constexpr double kMixedPrecisionUlps = 2.0;

}  // namespace numprobe
