// Where two runs part: op classes with their rounding tolerances, the noise regime of a pair and
// the walk over its entries in execution order that yields the suspects (docs/compare.md, "First
// divergence"). Row statuses (msprobe's thresholds) are not touched here.
#pragma once

#include <cstdint>
#include <string_view>

#include "numprobe/compare/rows.h"

namespace numprobe {

struct PairResult;

// How an op's output may differ between two healthy runs whose inputs are bitwise equal.
enum class OpClass : uint8_t {
  kElementwise,    // no accumulation: same inputs, same bits (relu, gelu, add, masked_fill, casts)
  kReduction,      // sums in a thread/vector-dependent order: ~sqrt(N) ulps (sum, losses, pooling)
  kContraction,    // matmul/conv/RNN: reduction order, or TF32/HF32 inputs on accelerators
  kNormalization,  // layer/batch/group norm: a reduction then elementwise
  kSoftmax,        // max + exp + sum
  kCollective,     // Distributed.*: reduction order across ranks
  kModule,         // a Module/Cell entry: what its dumped APIs did plus anything uncaptured
  kUnknown,        // not classified: judged with the noisy-regime tolerance only
};
const char* op_class_name(OpClass c);
// From the entry's name (its API, e.g. "Functional.layer_norm.0.forward"). Backward entries of
// elementwise ops count as reductions (a broadcast's gradient is a sum).
OpClass op_class(std::string_view entry_name);
// A module entry of a class that contracts (Linear, Conv2d, LSTM, MultiheadAttention, Dense...).
bool contraction_module(std::string_view entry_name);

// What the pair's agreement so far says about the noise between the two setups.
enum class Regime : uint8_t {
  kBitwise,         // every entry so far agrees bit for bit (same setup up to here)
  kReductionOrder,  // contractions/reductions differ by a few ulps (threads, BLAS build)
  kTf32,            // contractions differ at TF32/HF32 level (~2^-10: another accelerator)
  kLowPrecision,    // bf16/fp16 tensors: noise at their ulp
  // One run computes in bf16/fp16 where the other computes in fp32 (autocast, a bf16 model against
  // an fp32 golden): detected for the whole pair (mixed_precision_dtype), each op's floor is the
  // low dtype's rounding through that op.
  kMixedPrecision,
};
const char* regime_name(Regime r);

// The output discrepancy that reduction-order noise alone can give an op of class `c` with `n`
// accumulated terms in `dtype` (4 sqrt(n) ulps; 0 for elementwise and module entries, which are
// deterministic given bitwise-equal inputs).
double reduction_order_tolerance(OpClass c, DType dtype, double n);

// The low-precision dtype (bf16 or fp16) when the pair is a mixed-precision one, else kUnknown:
// most of the forward contractions both runs have (linear, matmul, convolutions; at least one) give
// their output in bf16/fp16 in one run and in fp32/fp64 in the other. One layer run in bf16 by
// mistake changes a few of them, and stays a dtype finding.
DType mixed_precision_dtype(const PairResult& p);

// Fills p.suspects (up to 5, in execution order), p.first_divergence (the first suspect) and
// p.regime. `carried`: how far the previous step of the same rank had drifted (carried_discrepancy
// of it; 0 when it agreed bit for bit or there is none; +inf when unknown: the first dumped step
// is a later one, and the steps before it were not dumped). `previous` with `carried` 0: the
// previous step agreed bit for bit, so this step's parameters hold the same bits in both runs. Its
// parameters were updated from those gradients, so they may differ that much (relative to
// themselves, an update smaller than the weight moves them by at most the gradient's relative
// difference). `previous`: that step's pair, when there is one: a parameter or running statistic
// may also differ by twice what the golden's step moved it (an adaptive optimizer's update does not
// shrink with the gradient). `after_bitwise_step`: the step before this one (not dumped) is known
// to have agreed bit for bit, as a previous pair with `carried` 0 says (judge_first_steps,
// PriorSteps::kBitwise).
void judge_divergence(PairResult& p, double carried = 0, const PairResult* previous = nullptr,
                      bool after_bitwise_step = false);

// The largest row discrepancy of a pair (inf when rows differ in md5 mode or are unpaired; 0 when
// every row agrees bit for bit): what the next step inherits.
double carried_discrepancy(const PairResult& p);

}  // namespace numprobe
