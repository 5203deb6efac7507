// The walk over a pair's entries in execution order that names where the runs part
// (compare_judgement.h, docs/compare.md "First divergence").
//
// Invariants the walk relies on:
// - Within one run, a tensor that flows unchanged from the op that produced it to the op that
//   consumes it has the same dumped summary at both places (same bits, same tool). So when the
//   golden consumer's input matches a golden producer's output, the target's input must match
//   the target producer's output too; if it does not, something no captured op did changed it.
// - While every entry so far agreed bit for bit, both setups computed the same thing: an
//   elementwise op (or a module, whose captured APIs all agreed) that now differs with bitwise-
//   equal inputs is the divergence, however small. Only ops that accumulate may differ by
//   rounding (reduction order; TF32 inputs for contractions).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "api_signature.h"
#include "compare/implementation.h"
#include "compare/judgement.h"
#include "compare/noise.h"
#include "compare/optimizer_step.h"
#include "format/entry_name.h"
#include "numprobe/compare.h"
#include "numprobe/compare/tensor_metrics.h"

namespace numprobe {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr size_t kMaxSuspects = 5;
// After a step that agreed bit for bit, an optimizer given the same gradients computes the same
// update up to its own rounding: a fused or multi-tensor kernel (Adam's fused=True) orders the
// update's arithmetic otherwise, a few ulps of the update, so p - u lands one ulp of p off on the
// few elements where that crosses a rounding boundary (about |du| / ulp(p) of them). The extremes
// then differ by at most one ulp of the magnitude, the sums by a few ulps of how far the step moved
// the parameter (row_discrepancy's scale). A changed lr, beta, eps or weight decay changes the
// update by far more than its ulps.
constexpr double kUpdateRoundingUlps = 4.0;

// Rows [begin, end) of p.rows that belong to one entry: a target entry (with its golden-only rows
// following it), or an entry only the golden has.
struct EntryRows {
  size_t begin = 0, end = 0;
  bool golden_only = false;
  uint32_t entry = 0;  // target entry, or golden entry when golden_only
};

std::vector<EntryRows> entry_groups(const PairResult& p) {
  std::vector<EntryRows> groups;
  for (size_t i = 0; i < p.rows.size();) {
    const RowPair& rp = p.rows[i].pair;
    EntryRows g;
    g.begin = i;
    g.golden_only = rp.target < 0;
    g.entry = g.golden_only ? p.golden_rows[rp.golden].entry : p.target_rows[rp.target].entry;
    // The golden entry paired with a target entry (from its first paired row); -1: none.
    int64_t golden_entry = g.golden_only ? g.entry : -1;
    if (rp.target >= 0 && rp.golden >= 0) golden_entry = p.golden_rows[rp.golden].entry;
    ++i;
    while (i < p.rows.size()) {
      const RowPair& r = p.rows[i].pair;
      if (r.target >= 0) {
        if (g.golden_only || p.target_rows[r.target].entry != g.entry) break;
        if (golden_entry < 0 && r.golden >= 0) golden_entry = p.golden_rows[r.golden].entry;
      } else if (static_cast<int64_t>(p.golden_rows[r.golden].entry) != golden_entry) {
        break;  // another golden entry: one the golden run alone has
      }
      ++i;  // golden-only rows of a paired target entry stay with it
    }
    g.end = i;
    groups.push_back(g);
  }
  return groups;
}

bool is_input(const CompareRow& r) {
  return r.state == RowState::kInput || r.state == RowState::kParameters;
}

// Identity of a dumped tensor within one run: shape, dtype and summary (statistics or CRC).
std::string tensor_key(const CompareRow& r) {
  std::string k;
  k.reserve(64);
  k.push_back(static_cast<char>(r.element_type));
  for (int64_t d : r.shape) k.append(reinterpret_cast<const char*>(&d), sizeof d);
  k.push_back('|');
  if (!r.md5.empty()) k.append(r.md5);
  for (const StatValue* s : {&r.max, &r.min, &r.mean, &r.norm}) {
    if (!s->has_number()) continue;
    k.append(reinterpret_cast<const char*>(&s->v), sizeof s->v);
  }
  return k;
}

double numel(Dims shape) {
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(std::max<int64_t>(d, 1));
  return n;
}

// The number of terms an op accumulates per output element, from its inputs' shapes: a
// convolution's weight (in_channels x kernel), else the last dim of the first input (matmul,
// linear, softmax and norms over the last dim); the whole first input for other reductions.
double accumulated_terms(OpClass c, std::string_view entry,
                         const std::vector<const CompareRow*>& in) {
  if (in.empty()) return 1;
  if (c == OpClass::kContraction && entry.find("conv") != std::string_view::npos && in.size() > 1 &&
      in[1]->shape.size() >= 3)
    return numel(in[1]->shape) / static_cast<double>(std::max<int64_t>(in[1]->shape[0], 1));
  if (c == OpClass::kReduction || c == OpClass::kNormalization) return numel(in[0]->shape);
  return in[0]->shape.empty()
             ? 1
             : static_cast<double>(std::max<int64_t>(in[0]->shape[in[0]->shape.size() - 1], 1));
}

// The module a Module/Cell entry belongs to: its name before the direction ("Module.head.Linear"
// for "Module.head.Linear.parameters_grad.0" and "Module.head.Linear.forward.0").
std::string_view module_of(std::string_view entry) {
  for (std::string_view dir : {".forward.", ".backward.", ".parameters_grad."}) {
    const size_t at = entry.rfind(dir);
    if (at != std::string_view::npos) return entry.substr(0, at);
  }
  return entry;
}

// The rounding an accumulating op nobody recorded may leave in a tensor of this row's shape and
// dtype: reduction-order noise over as many terms as its last dimension holds (the contraction
// estimate of accumulated_terms). Another CPU generation or BLAS kernel gives exactly this while
// every recorded entry still agrees bit for bit: a gradient whose producer (an LSTM's input
// gradient, a weight gradient no API entry lists) was not dumped.
double uncaptured_rounding(const CompareRow& r) {
  const double last =
      r.shape.empty() ? 1 : static_cast<double>(std::max<int64_t>(r.shape[r.shape.size() - 1], 1));
  return reduction_order_tolerance(OpClass::kContraction, r.element_type, last);
}

// The rounding another CPU generation leaves in initial weights: torch's random initialisers run
// vectorised transcendental functions (log, cos) that differ from the scalar ones by a few ulps
// (seen: up to 2.5 ulps on an embedding drawn by randn). A weight loaded wrong, a row scaled by
// 1e-3, moves the weight's statistics far more.
double initial_rounding(const CompareRow& r) {
  return dtype_is_floating(r.element_type) ? 8 * dtype_epsilon(r.element_type) : 0;
}

// A forward input row of the call's first argument ("input.0", "input.0.1", "input.input",
// "input.self"): the data an op works on, rather than its weights and options.
bool first_argument(const CompareRow& row) {
  std::string_view suffix = row.name.substr(row.suffix_at);
  if (!suffix.empty() && suffix.front() == '.') suffix.remove_prefix(1);
  constexpr std::string_view kInput = "input.";
  if (suffix.compare(0, kInput.size(), kInput) != 0) return false;
  suffix.remove_prefix(kInput.size());
  const std::string_view head = suffix.substr(0, suffix.find('.'));
  return head == "0" || head == "input" || head == "self";
}

// Coarser dtype: the one with the larger epsilon.
DType coarser(DType a, DType b) {
  if (!dtype_is_floating(b)) return a;
  if (!dtype_is_floating(a)) return b;
  return dtype_epsilon(b) > dtype_epsilon(a) ? b : a;
}

// Largest absolute value of a tensor row (0 without statistics).
double magnitude(const CompareRow& r) {
  if (!r.max.has_number() || !r.min.has_number()) return 0;
  return std::max(std::fabs(r.max.v), std::fabs(r.min.v));
}

// Root mean square of a tensor row (0 without statistics).
double rms(const CompareRow& r) {
  return r.norm.has_number() ? std::fabs(r.norm.v) / std::sqrt(numel(r.shape)) : 0;
}

// How much smaller an op's output is than the terms it summed (>= 1). Rounding noise, and the
// difference a sum inherits from its inputs, are relative to the terms, while row discrepancies
// are relative to the row itself: an output that cancels (the bias gradient of a norm whose
// output feeds another norm, a mean near zero) shows a larger relative difference for the same
// absolute one. Reductions and norms compare with their largest input; a contraction of K terms
// with the size K random-signed products would sum to, sqrt(K) rms(a) rms(b). Elementwise ops and
// modules do not sum (1).
double cancellation(OpClass c, const std::vector<const CompareRow*>& in, const CompareRow& t_out,
                    const CompareRow& g_out, double k) {
  const double out = std::max(magnitude(t_out), magnitude(g_out));
  double terms = 0;
  switch (c) {
    case OpClass::kReduction:
    case OpClass::kNormalization:
    case OpClass::kSoftmax:
    case OpClass::kCollective:
      for (const CompareRow* r : in)
        if (dtype_is_floating(r->element_type)) terms = std::max(terms, magnitude(*r));
      break;
    case OpClass::kContraction:
      if (in.size() >= 2) terms = std::sqrt(std::max(k, 1.0)) * rms(*in[0]) * rms(*in[1]);
      break;
    default:
      return 1;
  }
  if (!(out > 0) || !std::isfinite(terms)) return 1;
  return std::max(1.0, terms / out);
}

// A forward input an op adds to its result (a linear, convolution or norm's bias): its difference
// reaches the output as an absolute one, not in proportion to the bias's own size. A bias near
// zero whose elements moved by a drifted step differs a lot relative to itself, and not at all
// relative to the output it is added to.
bool additive_input(const CompareRow& row) {
  std::string_view suffix = row.name.substr(row.suffix_at);
  if (!suffix.empty() && suffix.front() == '.') suffix.remove_prefix(1);
  constexpr std::string_view kBias = "input.bias";
  if (suffix == kBias) return true;
  const std::string api = forward_api_of(row);
  if (api.empty()) return false;
  if (other_input_spelling(api, suffix) == kBias) return true;
  // linear(input, weight, bias), conv*d(input, weight, bias, ...): no Python re-spelling, so no
  // table entry.
  const bool weight_then_bias = api == "Functional.linear" || api.rfind("Functional.conv", 0) == 0;
  return weight_then_bias && suffix == "input.2";
}

// A buffer an op updates in place from each batch (BatchNorm's running_mean/running_var): state
// the previous step left behind, like the parameters it updated.
bool running_statistic(const CompareRow& row) {
  std::string_view suffix = row.name.substr(row.suffix_at);
  if (!suffix.empty() && suffix.front() == '.') suffix.remove_prefix(1);
  constexpr std::string_view kRunning = "input.running_";
  if (suffix.compare(0, kRunning.size(), kRunning) == 0) return true;
  const std::string api = forward_api_of(row);
  return !api.empty() &&
         other_input_spelling(api, suffix).compare(0, kRunning.size(), kRunning) == 0;
}

bool low_precision_dtype(DType t) {
  return t == DType::kBF16 || t == DType::kF16;
}
bool full_precision_dtype(DType t) {
  return t == DType::kF32 || t == DType::kF64;
}

// The two runs hold one tensor in a low and a full precision float: what a mixed-precision pair
// does everywhere, not a finding there.
bool precision_change(DType a, DType b) {
  return (low_precision_dtype(a) && full_precision_dtype(b)) ||
         (low_precision_dtype(b) && full_precision_dtype(a));
}

struct Judge {
  Judge(PairResult& pair, bool structural_names, double carried_drift,
        const PairResult* previous_step)
      : p(pair),
        md5(pair.mode == CompareMode::kMd5),
        structural(structural_names),
        bitwise(carried_drift == 0),
        regime(bitwise ? Regime::kBitwise : Regime::kReductionOrder),
        carried(carried_drift),
        previous(previous_step) {}

  PairResult& p;
  const bool md5;
  const bool structural;  // same framework, no user mappings: names and arguments are comparable
  bool bitwise;           // every entry so far agreed bit for bit
  Regime regime;
  double present = 0;  // the largest output difference seen so far: what the runs already carry
  double carried = 0;  // what the previous step left in the parameters
  // golden output tensor -> the paired target output row (the latest producer of that tensor)
  std::unordered_map<std::string, int64_t> producers;
  // Forward entries only one run has, not judged yet: the outputs they made on their side. One is
  // the divergence when a later entry consumes one of those outputs and the runs differ there (a
  // dropout left active); it is dropped when the consumer's inputs agree (a call one dumping tool
  // records and the other does not: msprobe 26 on torch 2.14 leaves out Tensor.reshape and
  // VF.lstm calls numprobe records).
  struct OneSided {
    EntryRows g;
    size_t position = 0;
    Regime regime = Regime::kBitwise;  // when it ran
    bool target_side = true;
    bool behind_equal = false;  // reached a consumer with equal statistics (pending's rule)
    std::unordered_set<std::string> outputs;
    std::unordered_set<std::string> inputs;  // tensor inputs, to settle the calls that made them
    int64_t module = -1;                     // its enclosing module entry on its side
    bool forward = false;
  };
  // Outputs of one-sided calls settled by settle_made_for_none, per side.
  std::unordered_set<std::string> settled_target, settled_golden;
  // Enclosing module entry of every entry on each side (pair.h, enclosing_modules).
  std::vector<int64_t> target_modules, golden_modules;
  std::vector<OneSided> one_sided;
  // One-sided entries whose output the current entry consumes with equal statistics: equal
  // statistics are not equal values (a permutation keeps them), so such an entry is a finding
  // when the entry consuming its output becomes a suspect itself, and is dropped otherwise.
  std::vector<OneSided> pending;
  // Execution-order position of the entry being judged, and of each suspect (parallel to
  // p.suspects): entries only the golden has are walked where the golden ran them, while their
  // rows sit at the end of p.rows (the CSV's order).
  size_t position = 0;
  std::vector<size_t> suspect_positions;
  const PairResult* previous = nullptr;  // the previous step of the same rank, if any
  // The step before agreed bit for bit (dumped, or known): this step's parameters are the same
  // bits in both runs, whatever CPU each used.
  bool after_bitwise_step = false;
  std::unordered_map<std::string_view, const CompareRow*> previous_rows;  // its golden's, by name
  // Module -> the rows its forward's first tensor input holds (numel over the last dimension):
  // the terms each element of its weights' gradients sums.
  std::unordered_map<std::string, double> module_rows;
  // Forward API entry -> the largest difference of its tensor inputs: what its backward computes
  // from besides its gradients (relu's mask, the saved activations of a matmul).
  std::unordered_map<std::string, double> forward_inputs;
  // kBF16/kF16 for a mixed-precision pair (mixed_precision_dtype), else kUnknown.
  DType mixed = DType::kUnknown;

  // Modules judged as a whole (implementation.h): their direct calls are not walked; the tensors
  // those calls made are compared where something consumes them.
  struct Region {
    const ImplementationRegion* r = nullptr;
    double entering = -1;  // `present` when the walk reached it: the drift its inputs carried
    double worst = 0, tolerance = 0;
  };
  std::vector<Region> regions;
  std::unordered_map<uint32_t, size_t> region_of_target, region_of_golden;  // direct calls
  // The tensors their calls made (by tensor_key), on each side.
  std::unordered_map<std::string, size_t> region_target_outputs, region_golden_outputs;
  int64_t dissolve = -1;  // a region whose results differ beyond noise: walk its calls one by one
  // Where that region's results were seen to differ: the walk position, the row (into p.rows) and
  // its target tensor, how far and against what, and the drift the region's inputs carried.
  struct Break {
    size_t position = 0, row = 0;
    std::string target_key;
    double d = 0, tolerance = 0, entering = 0;
  };
  Break broke;

  void set_regions(const std::vector<const ImplementationRegion*>& live) {
    for (const ImplementationRegion* r : live) {
      const size_t k = regions.size();
      regions.push_back({r});
      auto keys = [&](const std::vector<uint32_t>& entries, bool target_side) {
        std::unordered_set<uint32_t> mine(entries.begin(), entries.end());
        // In execution order (rows follow their entries): a tensor the calls received from
        // outside and pass on unchanged (a no-op cast of the module's input) is not theirs.
        std::unordered_set<std::string> outside, made;
        const std::vector<CompareRow>& rows = target_side ? p.target_rows : p.golden_rows;
        for (const CompareRow& row : rows) {
          if (!mine.count(row.entry) || row.kind != RowKind::kTensor) continue;
          std::string key = tensor_key(row);
          if (is_input(row)) {
            if (!made.count(key)) outside.insert(std::move(key));
          } else if (!outside.count(key)) {
            made.insert(std::move(key));
          }
        }
        auto& out = target_side ? region_target_outputs : region_golden_outputs;
        for (const std::string& key : made) out.emplace(key, k);
        for (uint32_t e : entries) (target_side ? region_of_target : region_of_golden)[e] = k;
      };
      keys(r->target_entries, true);
      keys(r->golden_entries, false);
    }
  }

  // The region of a walked entry when it is one of the direct calls of a module judged as a whole.
  const Region* region_of(const EntryRows& g) {
    if (regions.empty()) return nullptr;
    const auto& m = g.golden_only ? region_of_golden : region_of_target;
    auto it = m.find(g.entry);
    if (it == m.end()) return nullptr;
    Region& reg = regions[it->second];
    if (reg.entering < 0) reg.entering = present;
    return &reg;
  }

  // The region whose calls made the tensor this row pair holds (either side may be missing), or -1.
  int64_t made_in_region(const CompareRow* t, const CompareRow* g) const {
    if (regions.empty()) return -1;
    if (g && g->kind == RowKind::kTensor) {
      auto it = region_golden_outputs.find(tensor_key(*g));
      if (it != region_golden_outputs.end()) return static_cast<int64_t>(it->second);
    }
    if (t && t->kind == RowKind::kTensor) {
      auto it = region_target_outputs.find(tensor_key(*t));
      if (it != region_target_outputs.end()) return static_cast<int64_t>(it->second);
    }
    return -1;
  }

  // How far a tensor made by other calls for the same math may differ: their other rounding (a
  // few ulps per accumulation, as contractions over the tensor's last dimension; the TF32/HF32
  // floor where the pair rounds at that level: fused accelerator kernels), plus what the
  // region's inputs already carried, amplified as by any op.
  double region_tolerance(const Region& reg, const CompareRow& t) const {
    const double n = t.shape.empty()
                         ? 1
                         : static_cast<double>(std::max<int64_t>(t.shape[t.shape.size() - 1], 1));
    const bool accelerator = regime >= Regime::kTf32 || mixed != DType::kUnknown ||
                             dtype_epsilon(t.element_type) > dtype_epsilon(DType::kF32);
    const double floor =
        accelerator ? noise_tolerance(t.element_type)
                    : std::max(8 * dtype_epsilon(t.element_type),
                               reduction_order_tolerance(OpClass::kContraction, t.element_type, n));
    return floor + kNoiseAmplification * std::max(reg.entering, 0.0);
  }

  double discrepancy(const CompareRow& t, const CompareRow& g) const {
    if (md5 && t.kind == RowKind::kTensor && g.kind == RowKind::kTensor)
      return t.shape == g.shape && t.md5 == g.md5 ? 0 : kInf;
    return row_discrepancy(t, g);
  }

  void note_noise(Regime r) { regime = std::max(regime, r); }

  // A paired input (t, g) differing by d: settles the one-sided entries that produced it.
  void consumed(const CompareRow& t, const CompareRow& g, double d) {
    for (size_t k = 0; k < one_sided.size();) {
      const OneSided& o = one_sided[k];
      if (!o.outputs.count(tensor_key(o.target_side ? t : g))) {
        ++k;
        continue;
      }
      const double limit = bitwise ? 0 : noise_tolerance(t.element_type);
      if (d > limit && p.suspects.size() < kMaxSuspects) {
        add_one_sided(o);
      } else if (d == 0 && !md5) {
        pending.push_back(o);
      }
      one_sided.erase(one_sided.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }

  // A tensor only one run made, by calls the other run does not make, reaching a place where the
  // other run passes None (a mask eager attention builds and sdpa does without): how the two
  // implementations differ, not a finding. Settles those calls and the one-sided calls that fed
  // them; false when no one-sided call made it.
  bool settle_made_for_none(const CompareRow& tensor, bool target_side) {
    if (tensor.kind != RowKind::kTensor) return false;
    std::unordered_set<std::string>& before = target_side ? settled_target : settled_golden;
    std::string key = tensor_key(tensor);
    if (before.count(key)) return true;  // the same mask, passed on to the next layer
    if (one_sided.empty()) return false;
    std::unordered_set<std::string> wanted{std::move(key)};
    std::unordered_set<int64_t> modules;
    for (bool grew = true; grew;) {
      grew = false;
      for (size_t k = 0; k < one_sided.size(); ++k) {
        const OneSided& o = one_sided[k];
        if (o.target_side != target_side || !o.forward || modules.count(o.module) ||
            std::none_of(o.outputs.begin(), o.outputs.end(),
                         [&](const std::string& out) { return wanted.count(out); }))
          continue;
        wanted.insert(o.inputs.begin(), o.inputs.end());
        modules.insert(o.module);
        grew = true;
      }
    }
    if (modules.empty()) return false;
    // The other calls only that run made in the same module belong to the same choice (the
    // positions and ranges the mask was built from).
    auto mine = [&](const OneSided& o) {
      return o.target_side == target_side && o.forward && modules.count(o.module) != 0;
    };
    for (const OneSided& o : one_sided)
      if (mine(o)) before.insert(o.outputs.begin(), o.outputs.end());
    one_sided.erase(std::remove_if(one_sided.begin(), one_sided.end(), mine), one_sided.end());
    return true;
  }

  // An output that is an earlier entry's output unchanged (a module returning its last API's
  // result, a view): its difference was judged there.
  bool passed_through(const CompareRow& t, const CompareRow& g) const {
    if (t.kind != RowKind::kTensor || g.kind != RowKind::kTensor) return false;
    auto it = producers.find(tensor_key(g));
    return it != producers.end() &&
           discrepancy(t, p.target_rows[static_cast<size_t>(it->second)]) == 0;
  }

  // How far a parameter (or running statistic) moved in the golden run since the previous step,
  // relative to itself; 0 without a previous step. An optimizer carries the previous step's
  // drift into the parameters, but not in proportion: Adam's first updates are +-lr whatever the
  // gradient's size, so a gradient element that is rounding noise around zero can flip sign
  // between the runs and move its parameter by twice its update. Running statistics move by
  // momentum x a batch statistic that may cancel. Either way the runs may differ by up to twice
  // what the golden's own step moved the tensor.
  double moved(const CompareRow& g) {
    if (!previous) return 0;
    if (previous_rows.empty())
      for (const CompareRow& r : previous->golden_rows) previous_rows.emplace(r.name, &r);
    auto it = previous_rows.find(g.name);
    if (it == previous_rows.end() || it->second->kind != RowKind::kTensor) return 0;
    return row_discrepancy(g, *it->second);
  }

  // A module judged as a whole whose results differed beyond noise (b), and nothing named at or
  // before where that was seen once its calls were walked one by one: its calls pair with nothing
  // (a layer mapping pairs modules, not a primitive with the functional doing its work; across
  // frameworks) or each agreed with its partner. The module is the divergence, named at the call
  // of the target run that made the differing tensor where one did (its construct.json parent
  // names the module), else at the module entry. `groups`, `target_group`: the pair's entries.
  void add_region(const ImplementationRegion& r, const Break& b,
                  const std::vector<EntryRows>& groups,
                  const std::unordered_map<uint32_t, size_t>& target_group) {
    for (size_t at : suspect_positions)
      if (at <= b.position) return;
    FirstDivergence f;
    f.reason = "outputs_diverge";
    f.input_discrepancy = b.entering;
    f.output_discrepancy = b.d;
    f.tolerance = b.tolerance;
    const double margin = b.tolerance > 0 ? b.d / b.tolerance : kInf;
    f.score = std::isfinite(margin) ? 0.5 + 0.5 * std::min(1.0, std::log10(margin) / 3) : 0.9;
    for (uint32_t e : r.target_entries) {
      auto it = target_group.find(e);
      if (it == target_group.end()) continue;
      const EntryRows& g = groups[it->second];
      for (size_t i = g.begin; i < g.end; ++i) {
        const RowPair& rp = p.rows[i].pair;
        if (rp.target < 0) continue;
        const CompareRow& row = p.target_rows[rp.target];
        if (row.kind == RowKind::kTensor && !is_input(row) && tensor_key(row) == b.target_key)
          return add(std::move(f), g, &p.rows[i], b.position, regime);
      }
    }
    if (auto it = target_group.find(r.module); it != target_group.end())
      add(std::move(f), groups[it->second], &p.rows[b.row], b.position, regime);
  }

  // A parameter after a step that agreed bit for bit differing only as another rounding of the
  // same update would (kUpdateRoundingUlps); needs the previous step's golden to size the update.
  bool update_rounding(const CompareRow& t, const CompareRow& g) {
    const double update = moved(g), ulp = dtype_epsilon(t.element_type);
    if (!(update > 0) || !std::isfinite(update)) return false;
    const RowDiscrepancy parts = row_discrepancy_parts(t, g);
    return parts.extremes <= ulp && parts.sums <= kUpdateRoundingUlps * ulp * update;
  }

  void add_one_sided(const OneSided& o) {
    FirstDivergence f;
    f.reason = "structure_differs";
    f.input_discrepancy = f.output_discrepancy = kInf;
    f.score = 1;
    add(std::move(f), o.g, nullptr, o.position, o.regime);
  }

  void add(FirstDivergence f, const EntryRows& g, const RowResult* row) {
    add(std::move(f), g, row, position, regime);
  }
  // `at`, `when`: the walk position and regime of the entry (an earlier one for an entry only
  // one run has, settled when its consumer is judged).
  void add(FirstDivergence f, const EntryRows& g, const RowResult* row, size_t at, Regime when) {
    const std::string_view name =
        g.golden_only ? p.golden.dump.entry_name(g.entry) : p.target.dump.entry_name(g.entry);
    f.entry = std::string(name);
    f.op_class = op_class_name(op_class(name));
    f.regime = regime_name(when);
    const RowResult& r = row ? *row : p.rows[g.begin];
    f.row_index = static_cast<size_t>(&r - p.rows.data());
    f.row = std::string(r.pair.target >= 0 ? p.target_rows[r.pair.target].name
                                           : p.golden_rows[r.pair.golden].name);
    f.direction = std::string(direction_name(parse_entry_name(f.entry).direction));
    const auto& construct = g.golden_only ? p.golden.construct : p.target.construct;
    if (construct) {
      auto parent = construct->parent_of(f.entry);
      if (parent) f.module = std::string(*parent);
    }
    p.suspects.push_back(std::move(f));
    suspect_positions.push_back(at);
  }

  void entry(const EntryRows& g, bool paired_entry) {
    const size_t before = p.suspects.size();
    judge(g, paired_entry);
    if (pending.empty()) return;
    if (p.suspects.size() > before) {
      for (const OneSided& o : pending) add_one_sided(o);
    } else if (paired_entry && outputs_agree(g)) {
      // Equal statistics in, equal statistics out (a reshape of the rolled labels): the doubt
      // travels on with the outputs to their consumers.
      for (OneSided& o : pending) {
        o.behind_equal = true;
        o.outputs.clear();
        for (size_t i = g.begin; i < g.end; ++i) {
          const RowPair& rp = p.rows[i].pair;
          if (rp.target < 0 || rp.golden < 0) continue;
          const CompareRow& r = o.target_side ? p.target_rows[rp.target] : p.golden_rows[rp.golden];
          if (r.kind == RowKind::kTensor && !is_input(r)) o.outputs.insert(tensor_key(r));
        }
        if (!o.outputs.empty()) one_sided.push_back(std::move(o));
      }
    }
    pending.clear();
  }

  // Every paired tensor output of the entry has the same summary in both runs.
  bool outputs_agree(const EntryRows& g) const {
    for (size_t i = g.begin; i < g.end; ++i) {
      const RowPair& rp = p.rows[i].pair;
      if (rp.target < 0 || rp.golden < 0) continue;
      const CompareRow& t = p.target_rows[rp.target];
      if (!is_input(t) && discrepancy(t, p.golden_rows[rp.golden]) > 0) return false;
    }
    return true;
  }

  // One entry's judgement, in the steps docs/compare.md ("First divergence") describes: an entry
  // only one run has is set aside for its consumers; a paired entry's rows give the evidence
  // (which inputs and outputs differ, and whether anything captured explains an input); a
  // structural finding comes first (an argument, a dtype, a tensor one run lacks, an input nothing
  // explains); then the outputs against what the inputs explain: a weight's gradient and an entry
  // whose inputs agree bit for bit against rounding alone, any other against the amplification
  // bound of its inputs' differences.
  void judge(const EntryRows& g, bool paired_entry) {
    if (!paired_entry) return set_aside_one_sided(g);
    const std::string_view name = p.target.dump.entry_name(g.entry);
    const OpClass cls = op_class(name);
    const Direction direction = parse_entry_name(name).direction;
    const bool forward = direction == Direction::kForward;
    Evidence ev = gather_evidence(g, forward);
    record_producers(g);
    const double d_saved = saved_input_difference(name, cls, direction, ev);
    note_module_rows(name, cls, forward, ev.inputs);
    if (ev.dt == DType::kUnknown) ev.dt = DType::kF32;
    const Tolerances tol = tolerances(name, cls, ev);
    const bool was_bitwise = bitwise;
    if (ev.any_difference) bitwise = false;
    if (std::isfinite(ev.d_out)) present = std::max(present, ev.d_out);

    FirstDivergence f;
    f.input_discrepancy = ev.d_in;
    f.output_discrepancy = ev.d_out;
    if (structural_finding(f, g, ev, tol, was_bitwise)) return;
    if (ev.d_out == 0) return;
    if (direction == Direction::kParametersGrad)
      return judge_weight_gradient(f, g, name, ev, was_bitwise);
    // A module is a subgraph whose APIs were judged one by one; its own amplification (several
    // ops, norms included) has no bound. Only while the runs agree bit for bit does a module's
    // difference say something its APIs did not: that it computed something uncaptured.
    if (!was_bitwise && cls == OpClass::kModule) return;
    // Outputs differ and every input is accounted for.
    const double c = cancellation(cls, ev.inputs, p.target_rows[ev.worst_out->pair.target],
                                  p.golden_rows[ev.worst_out->pair.golden], tol.n);
    if (ev.d_in == 0 && (was_bitwise || md5) && judge_same_inputs(f, g, cls, ev, tol, c)) return;
    if (md5) return;  // inputs already differ: the amplification cannot be measured in bits
    judge_amplification(f, g, cls, ev, tol, c, d_saved);
  }

  // What a paired entry's rows say (judge's first step).
  struct Evidence {
    double d_in = 0, d_out = 0;  // the largest input and output differences
    const RowResult* worst_out = nullptr;
    // Structural findings: an argument, a dtype, a tensor only one run has.
    const RowResult *args = nullptr, *dtype = nullptr, *missing = nullptr;
    const RowResult* unexplained = nullptr;  // an input whose difference nothing captured explains
    bool unexplained_external = false, unexplained_param = false;
    DType dt = DType::kUnknown;  // the coarsest tensor dtype of the entry
    std::vector<const CompareRow*> inputs;
    // Tensor inputs' differences for the amplification bound: (difference, the input's magnitude
    // when it is added to the output, else 0).
    std::vector<std::pair<double, double>> input_differences;
    bool any_difference = false;
  };

  // The rounding an entry may show: its dtype's noise floor, its reduction order over n terms,
  // and in a mixed-precision pair one rounding to the low dtype.
  struct Tolerances {
    double noise = 0, n = 1, order = 0, mixed = 0;
    bool low_precision = false, mixed_op = false;
  };

  // An entry only one run has. Only meaningful when names are comparable, and only for forward
  // entries and API backward entries (a gradient one run computes and the other does not: a
  // detach, a branch cut from the graph). A module backward or parameters_grad entry without a
  // counterpart says which hooks the dumping tool registered (msprobe writes no module backward
  // entries on torch 1.13, nor gradients of modules that never ran), not what was computed; a real
  // change there also shows in the entries around it.
  void set_aside_one_sided(const EntryRows& g) {
    const std::string_view name =
        g.golden_only ? p.golden.dump.entry_name(g.entry) : p.target.dump.entry_name(g.entry);
    const Direction dir = parse_entry_name(name).direction;
    const bool api_backward = dir == Direction::kBackward && op_class(name) != OpClass::kModule;
    if (structural && (dir == Direction::kForward || api_backward)) {
      OneSided o;
      o.g = g;
      o.position = position;
      o.regime = regime;
      o.target_side = !g.golden_only;
      o.forward = dir == Direction::kForward;
      const auto& modules = o.target_side ? target_modules : golden_modules;
      if (g.entry < modules.size()) o.module = modules[g.entry];
      for (size_t i = g.begin; i < g.end; ++i) {
        const RowPair& rp = p.rows[i].pair;
        const CompareRow* r = o.target_side
                                  ? (rp.target >= 0 ? &p.target_rows[rp.target] : nullptr)
                                  : (rp.golden >= 0 ? &p.golden_rows[rp.golden] : nullptr);
        if (r && r->kind == RowKind::kTensor)
          (is_input(*r) ? o.inputs : o.outputs).insert(tensor_key(*r));
      }
      one_sided.push_back(std::move(o));
    }
  }

  Evidence gather_evidence(const EntryRows& g, bool forward) {
    Evidence ev;
    double& d_in = ev.d_in;
    double& d_out = ev.d_out;
    const RowResult*& worst_out = ev.worst_out;
    const RowResult*& args = ev.args;
    const RowResult*& dtype = ev.dtype;
    const RowResult*& missing = ev.missing;
    const RowResult*& unexplained = ev.unexplained;
    bool& unexplained_external = ev.unexplained_external;
    DType& dt = ev.dt;
    std::vector<const CompareRow*>& inputs = ev.inputs;
    std::vector<std::pair<double, double>>& input_differences = ev.input_differences;
    bool& any_difference = ev.any_difference;
    for (size_t i = g.begin; i < g.end; ++i) {
      const RowResult& r = p.rows[i];
      if (r.excused) continue;
      if (r.pair.target < 0 || r.pair.golden < 0) {
        // A forward argument one run passes and the other leaves at its default (a class
        // weight, a mask): an argument that differs.
        const CompareRow& one =
            r.pair.target >= 0 ? p.target_rows[r.pair.target] : p.golden_rows[r.pair.golden];
        // ... unless other calls for the same math made it (a mask only eager attention needs).
        if (made_in_region(r.pair.target >= 0 ? &one : nullptr,
                           r.pair.golden >= 0 ? &one : nullptr) >= 0)
          continue;
        if (structural && forward && one.state == RowState::kInput && !args) args = &r;
        continue;
      }
      const CompareRow& t = p.target_rows[r.pair.target];
      const CompareRow& gr = p.golden_rows[r.pair.golden];
      const bool in = is_input(t);
      // A tensor a module judged as a whole made with other calls: its evidence. None in one run
      // (sdpa needs no mask, returns no attention weights) is how the implementations differ.
      if (const int64_t k = made_in_region(&t, &gr); k >= 0) {
        if (t.kind != RowKind::kTensor || gr.kind != RowKind::kTensor) continue;
        Region& reg = regions[static_cast<size_t>(k)];
        const double d = discrepancy(t, gr), tol = region_tolerance(reg, t);
        if (d >= reg.worst) {
          reg.worst = d;
          reg.tolerance = tol;
        }
        if (d > tol && dissolve < 0) {
          dissolve = k;
          broke = {position,      static_cast<size_t>(&r - p.rows.data()),
                   tensor_key(t), d,
                   tol,           std::max(reg.entering, 0.0)};
        }
        if (d > 0) {
          any_difference = true;
          note_noise(Regime::kReductionOrder);
        }
        if (in) {
          dt = coarser(dt, t.element_type);
          inputs.push_back(&t);
          d_in = std::max(d_in, d);
          if (d > 0) input_differences.emplace_back(d, 0);
        }
        continue;
      }
      if (t.kind == RowKind::kTensor) {
        dt = coarser(dt, t.element_type);
        if (in) inputs.push_back(&t);
      }
      // A tensor in one run where the other has None: an argument left out (a bias dropped)
      // when it is a forward input, else a gradient only one run computes (a detach).
      const bool t_none = t.kind == RowKind::kNone, g_none = gr.kind == RowKind::kNone;
      const bool one_none =
          structural && t_none != g_none && (t_none ? gr.kind : t.kind) == RowKind::kTensor;
      if (one_none && in && forward && settle_made_for_none(t_none ? gr : t, !t_none)) continue;
      const double d = discrepancy(t, gr);
      if (in && t.kind == RowKind::kTensor && !one_sided.empty()) consumed(t, gr, d);
      if (d > 0) any_difference = true;
      if (one_none) {
        if (in && forward) {
          if (!args) args = &r;
        } else if (!missing) {
          missing = &r;
        }
        continue;
      }
      const bool both_values =
          (t.kind == RowKind::kScalar || t.kind == RowKind::kOther) && t.kind == gr.kind;
      if (structural && in && both_values && d > 0) {
        if (!args) args = &r;
        continue;
      }
      const bool both_tensors = t.kind == RowKind::kTensor && gr.kind == RowKind::kTensor;
      // An API's backward outputs are the gradients of its last autograd node (msprobe hooks
      // the same node): two implementations of one op (channels_last pooling, a batched
      // matmul) end in nodes of other shapes. Not comparable; the entries consuming the real
      // gradients judge them.
      if (both_tensors && !in && !forward && t.shape != gr.shape) continue;
      if (structural && both_tensors && r.pair.dtype_checked && t.element_type != DType::kUnknown &&
          gr.element_type != DType::kUnknown && t.element_type != gr.element_type && !dtype &&
          !(mixed != DType::kUnknown && precision_change(t.element_type, gr.element_type)))
        dtype = &r;
      if (in) {
        d_in = std::max(d_in, d);
        if (both_tensors && d > 0)
          input_differences.emplace_back(d, forward && additive_input(t) ? magnitude(t) : 0);
        if (d > 0 && both_tensors && !unexplained) {
          // Where did this input come from? A golden producer whose target counterpart holds
          // other values than this input means an uncaptured change in between; no producer
          // means data or parameters from outside the dumped ops.
          trace_input(r, t, gr, d, forward, ev);
        } else if (d > 0 && !both_tensors && !structural && !unexplained) {
          unexplained = &r;  // an argument that differs where names cannot be compared
          unexplained_external = true;
        }
      } else if (d > 0 && !passed_through(t, gr) && d > d_out) {
        d_out = d;
        worst_out = &r;
      }
    }
    return ev;
  }

  // Where did an input that differs come from? A golden producer whose target counterpart holds
  // other values than this input means an uncaptured change in between; no producer means data
  // or parameters from outside the dumped ops.
  void trace_input(const RowResult& r, const CompareRow& t, const CompareRow& gr, double d,
                   bool forward, Evidence& ev) {
    const RowResult*& unexplained = ev.unexplained;
    bool& unexplained_external = ev.unexplained_external;
    bool& unexplained_param = ev.unexplained_param;
    auto it = producers.find(tensor_key(gr));
    if (it != producers.end()) {
      const CompareRow& made = p.target_rows[static_cast<size_t>(it->second)];
      // In a mixed-precision pair one run may pass a tensor on in both dtypes (autocast's
      // casts between the dumped ops): the copies differ by one rounding.
      const double cast =
          mixed != DType::kUnknown && precision_change(t.element_type, made.element_type)
              ? kMixedPrecisionUlps * dtype_epsilon(mixed)
              : 0;
      if (discrepancy(t, made) > cast) unexplained = &r;
    } else {
      // Parameters may differ by what the previous step carried. Other tensors from
      // nowhere (an uncaptured op's result, a backward input no dumped op produced) were
      // made by an op from the differences the runs already have: that op may amplify
      // them like any other.
      const bool param =
          t.requires_grad == 1 || t.state == RowState::kParameters || running_statistic(t);
      const double tol = noise_tolerance(t.element_type);
      // While every entry agreed bit for bit, the runs computed the same thing, but on
      // another CPU generation a tensor no dumped op made may still carry other rounding:
      // initial weights and random data (vectorised and scalar kernels round the last bit
      // differently), a gradient or activation from an op nobody dumped (its reduction
      // order). A fault in them shows far above that (docs/compare.md, "Across machines").
      // A weight (a module's parameter, an API's tensor argument after the first that needs
      // a gradient) in a first step keeps its initial values, whatever rounding the
      // activations picked up since: a filter scaled by 1e-3 is a finding after noise too.
      const bool weight = param && (t.state == RowState::kParameters || running_statistic(t) ||
                                    (forward && !first_argument(t)));
      // After a step that agreed bit for bit the weights are the same bits, up to another
      // rounding of the same update (update_rounding: a fused optimizer).
      const bool same_start = after_bitwise_step;
      const bool initial =
          !same_start && ((bitwise && param) || (weight && carried == 0 && !previous));
      const double floor = same_start && param ? 0
                           : initial           ? initial_rounding(t)
                           : bitwise           ? uncaptured_rounding(t)
                           : param             ? tol + std::max(carried, 2 * moved(gr))
                                               : tol + kNoiseAmplification * present;
      // Initial values: a few ulps on some elements move the extremes by that much and the
      // sums by far less; a scaled row moves the sums alone.
      bool beyond = d > floor;
      if (initial && !md5) {
        const RowDiscrepancy parts = row_discrepancy_parts(t, gr);
        beyond = parts.extremes > floor ||
                 parts.sums > std::max(dtype_epsilon(t.element_type), parts.summation);
      }
      if (same_start && param && beyond && !md5) beyond = !update_rounding(t, gr);
      if (bitwise && !md5 && !beyond) note_noise(Regime::kReductionOrder);
      // Bits cannot say how far: once the runs differ, md5 mode only traces producers.
      if (beyond && (bitwise || !md5)) {
        unexplained = &r;
        unexplained_external = true;
        unexplained_param = param;
      }
    }
  }

  // Outputs become the producers later inputs are traced to.
  void record_producers(const EntryRows& g) {
    for (size_t i = g.begin; i < g.end; ++i) {
      const RowPair& rp = p.rows[i].pair;
      if (rp.target < 0 || rp.golden < 0) continue;
      const CompareRow& gr = p.golden_rows[rp.golden];
      if (gr.kind == RowKind::kTensor && !is_input(gr) &&
          gr.shape == p.target_rows[rp.target].shape)
        producers[tensor_key(gr)] = rp.target;
    }
  }

  // A backward entry lists the gradients it received, not the forward tensors it reads: the
  // largest difference of its forward's tensor inputs (recorded here for a forward entry).
  double saved_input_difference(std::string_view name, OpClass cls, Direction direction,
                                const Evidence& ev) {
    const bool forward = direction == Direction::kForward;
    double d_saved = 0;
    if (cls != OpClass::kModule) {
      std::string counterpart(name);
      const size_t at = counterpart.rfind(".backward");
      if (forward) {
        double worst = 0;
        for (const auto& [d, added] : ev.input_differences) worst = std::max(worst, d);
        forward_inputs[counterpart] = worst;
      } else if (direction == Direction::kBackward && at != std::string::npos) {
        counterpart.replace(at, 9, ".forward");
        auto it = forward_inputs.find(counterpart);
        if (it != forward_inputs.end()) d_saved = it->second;
      }
    }
    return d_saved;
  }

  void note_module_rows(std::string_view name, OpClass cls, bool forward,
                        const std::vector<const CompareRow*>& inputs) {
    if (cls == OpClass::kModule && forward && !inputs.empty() && !inputs[0]->shape.empty())
      module_rows[std::string(module_of(name))] =
          numel(inputs[0]->shape) /
          static_cast<double>(std::max<int64_t>(inputs[0]->shape[inputs[0]->shape.size() - 1], 1));
  }

  Tolerances tolerances(std::string_view name, OpClass cls, const Evidence& ev) const {
    const DType dt = ev.dt;
    const double tol_noise = noise_tolerance(dt);
    const double n = accumulated_terms(cls, name, ev.inputs);
    const double tol_order = reduction_order_tolerance(cls, dt, n);
    const bool low_precision = dtype_epsilon(dt) > dtype_epsilon(DType::kF32);
    // Mixed precision: an op whose tensors are in the low dtype on one side rounds its result (and
    // a contraction its inputs) to it; a contraction may also run in the low dtype inside while its
    // dumped tensors stay fp32 (an LSTM under autocast). One rounding of each operand and of the
    // result: a few units of the low dtype's epsilon, magnified by cancellation like any sum.
    const bool mixed_op =
        mixed != DType::kUnknown &&
        (low_precision || cls == OpClass::kContraction || cls == OpClass::kUnknown);
    const double tol_mixed = mixed_op ? kMixedPrecisionUlps * dtype_epsilon(mixed) : 0;
    return Tolerances{tol_noise, n, tol_order, tol_mixed, low_precision, mixed_op};
  }

  // An argument, a dtype or a tensor only one run has, or an input nothing explains: named before
  // any output is weighed. True when the entry is a suspect.
  bool structural_finding(FirstDivergence& f, const EntryRows& g, const Evidence& ev,
                          const Tolerances& tol, bool was_bitwise) {
    if (ev.args) {
      f.reason = "args_differ";
      f.score = 1;
      add(std::move(f), g, ev.args);
      return true;
    }
    if (ev.dtype) {
      f.reason = "dtype_differs";
      f.score = 0.95;
      add(std::move(f), g, ev.dtype);
      return true;
    }
    if (ev.missing) {
      f.reason = "structure_differs";
      f.input_discrepancy = f.output_discrepancy = kInf;
      f.score = 1;
      add(std::move(f), g, ev.missing);
      return true;
    }
    if (ev.unexplained) {
      f.reason = ev.unexplained_param ? "parameters_differ" : "inputs_already_differ";
      f.source = ev.unexplained_param ? "parameters" : "data";
      f.tolerance = ev.unexplained_external && !was_bitwise ? tol.noise : 0;
      f.score = ev.unexplained_external ? 0.8 : 0.9;
      add(std::move(f), g, ev.unexplained);
      return true;
    }
    return false;
  }

  // A parameters_grad entry has no inputs to measure amplification against, and a gradient of a
  // weight is a sum over the batch (cancellation magnifies upstream noise). Once the runs differ,
  // a wrong gradient is named by the backward entry that computed it.
  void judge_weight_gradient(FirstDivergence& f, const EntryRows& g, std::string_view name,
                             const Evidence& ev, bool was_bitwise) {
    if (!was_bitwise) return;
    // While the runs agree bit for bit, a weight's gradient is the first record of a sum over the
    // batch that no API entry may have listed (a Linear's weight gradient at msprobe's L1): it may
    // differ by that sum's reduction order (another CPU's GEMM kernel), nothing more.
    auto rows = module_rows.find(std::string(module_of(name)));
    const double terms = rows == module_rows.end() ? 1 : rows->second;
    f.tolerance = reduction_order_tolerance(OpClass::kContraction, ev.dt, terms);
    if (ev.d_out <= f.tolerance) return note_noise(Regime::kReductionOrder);
    f.reason = "outputs_diverge";
    f.score = 0.85;
    return add(std::move(f), g, ev.worst_out);
  }

  // Inputs agree bit for bit (or, in md5 mode, are the same bits): the outputs may differ by the
  // op's own rounding alone. True when the entry was judged here.
  bool judge_same_inputs(FirstDivergence& f, const EntryRows& g, OpClass cls, const Evidence& ev,
                         const Tolerances& tols, double c) {
    const double d_out = ev.d_out, tol_noise = tols.noise, tol_order = tols.order;
    const double tol_mixed = tols.mixed;
    const bool low_precision = tols.low_precision, mixed_op = tols.mixed_op;
    const DType dt = ev.dt;
    const RowResult* worst_out = ev.worst_out;
    const bool deterministic = cls == OpClass::kElementwise || cls == OpClass::kModule;
    if (mixed_op && !md5 && d_out <= c * std::max(tol_mixed, tol_order)) {
      note_noise(Regime::kMixedPrecision);
      return true;
    }
    if (deterministic) {
      // Same inputs, same op, yet other bits: another CPU generation's vector math (GELU's
      // erf, exp, tanh differ by an ulp between AVX2 and AVX-512 kernels), or, in a module,
      // an uncaptured op's reduction order. A fault, even GELU's tanh approximation, is far
      // larger.
      const CompareRow& out = p.target_rows[worst_out->pair.target];
      f.tolerance =
          cls == OpClass::kModule ? uncaptured_rounding(out) : kVectorMathUlps * dtype_epsilon(dt);
      if (!md5 && d_out <= f.tolerance) {
        note_noise(Regime::kReductionOrder);
        return true;
      }
      f.reason = "outputs_diverge";
      f.score = 0.9;
      add(std::move(f), g, worst_out);
      return true;
    }
    if (md5) {
      // Bits alone cannot tell rounding from a fault in an op that accumulates: the benefit of
      // the doubt for the classified ones, none for ops nothing is known about.
      if (cls != OpClass::kUnknown) {
        note_noise(Regime::kReductionOrder);
        return true;
      }
      f.reason = "outputs_diverge";
      f.score = 0.6;
      add(std::move(f), g, worst_out);
      return true;
    }
    if (cls != OpClass::kUnknown) {
      if (d_out <= c * tol_order) {
        note_noise(low_precision ? Regime::kLowPrecision : Regime::kReductionOrder);
        return true;
      }
      if ((cls == OpClass::kContraction || cls == OpClass::kCollective) && d_out <= c * tol_noise) {
        note_noise(low_precision ? Regime::kLowPrecision : Regime::kTf32);
        return true;
      }
      f.reason = "outputs_diverge";
      f.tolerance = c * (cls == OpClass::kContraction ? tol_noise : tol_order);
      f.score = 0.85;
      add(std::move(f), g, worst_out);
      return true;
    }
    return false;
  }

  // Inputs differ: the outputs may differ by the op's rounding plus what it can amplify its
  // inputs' differences to.
  void judge_amplification(FirstDivergence& f, const EntryRows& g, OpClass cls, const Evidence& ev,
                           const Tolerances& tols, double c, double d_saved) {
    const double d_in = ev.d_in, d_out = ev.d_out, n = tols.n;
    const double tol_noise = tols.noise, tol_order = tols.order, tol_mixed = tols.mixed;
    const bool low_precision = tols.low_precision, mixed_op = tols.mixed_op;
    const DType dt = ev.dt;
    const RowResult* worst_out = ev.worst_out;
    const std::vector<const CompareRow*>& inputs = ev.inputs;
    const std::vector<std::pair<double, double>>& input_differences = ev.input_differences;
    // The rounding floor: an op that does not contract may round differently by a few ulps on
    // other hardware (another exp or rsqrt), and by its reduction order; the TF32/HF32 floor only
    // where contractions are seen to round at that level (or for contractions themselves).
    // Between CPUs an elementwise op or a norm never rounds at 2^-10: keeping that floor there
    // hid a LayerNorm with the wrong eps once the runs had drifted (issue 30).
    // Ops nothing is known about keep the TF32 floor too.
    const bool accelerator_noise = regime >= Regime::kTf32 || low_precision ||
                                   cls == OpClass::kContraction || cls == OpClass::kCollective ||
                                   cls == OpClass::kUnknown;
    const double few_ulps = 8 * dtype_epsilon(dt);
    const double tol = mixed_op            ? std::max(tol_mixed, tol_order)
                       : accelerator_noise ? std::max(tol_noise, tol_order)
                                           : std::max(few_ulps, tol_order);
    f.tolerance = c * tol;
    // A contraction of K terms whose inputs differ by a relative d can differ by up to ~sqrt(K) d:
    // K terms of either sign sum to ~sqrt(K) times one term, their differences to K times. The
    // statistics give d from the extremes and sums, not per element (an element near zero after a
    // norm may move far more than the Max): the output may move by what K terms of the inputs'
    // magnitudes can, K |w|max |x|max d over the output's magnitude.
    // d_in is measured at the inputs' extremes (|dMax| over the magnitude); a typical element
    // carrying the same absolute difference differs, relatively, by d_in x Max/RMS. The op acts
    // on typical elements as much as on the extremes.
    double spread = 1;
    for (const CompareRow* r : inputs)
      if (dtype_is_floating(r->element_type) && rms(*r) > 0)
        spread = std::max(spread, magnitude(*r) / rms(*r));
    // An added input (a bias) moves the output by its own absolute difference: relative to the
    // output, its difference times its magnitude over the output's.
    const double out_magnitude = std::max(magnitude(p.target_rows[worst_out->pair.target]),
                                          magnitude(p.golden_rows[worst_out->pair.golden]));
    double d_amp = 0;
    for (const auto& [d, added] : input_differences)
      d_amp = std::max(
          d_amp, added > 0 && out_magnitude > 0 ? d * std::min(1.0, added / out_magnitude) : d);
    if (input_differences.empty()) d_amp = d_in;  // differences only in non-tensor rows
    d_amp = std::max(d_amp, d_saved);
    double gain = kNoiseAmplification * spread;
    if (cls == OpClass::kContraction) {
      gain = std::max(gain, std::sqrt(n));
      if (inputs.size() >= 2) {
        const double lipschitz = n * magnitude(*inputs[0]) * magnitude(*inputs[1]) / out_magnitude;
        if (out_magnitude > 0 && std::isfinite(lipschitz)) gain = std::max(gain, lipschitz);
      }
    }
    if (d_out > c * (tol + gain * d_amp)) {
      f.reason = "outputs_diverge";
      const double margin = d_out / (c * (tol + gain * d_amp));
      f.score = std::isfinite(margin) ? 0.5 + 0.5 * std::min(1.0, std::log10(margin) / 3) : 0.9;
      return add(std::move(f), g, worst_out);
    }
    // What the pair showed: a contraction that needed the TF32 floor beyond what its inputs and
    // its reduction order explain is TF32-level rounding; anything else inherited differences.
    if (mixed != DType::kUnknown) return note_noise(Regime::kMixedPrecision);
    if (low_precision) return note_noise(Regime::kLowPrecision);
    const bool tf32_seen = (cls == OpClass::kContraction || cls == OpClass::kCollective) &&
                           d_out > c * (std::max(few_ulps, tol_order) + gain * d_amp);
    note_noise(tf32_seen ? Regime::kTf32 : Regime::kReductionOrder);
  }
};

}  // namespace

double carried_discrepancy(const PairResult& p) {
  double worst = 0;
  std::vector<bool> step;  // an optimizer step only one run records: judged at the next step
  bool step_known = false;
  for (size_t i = 0; i < p.rows.size(); ++i) {
    const RowResult& r = p.rows[i];
    if (r.excused) continue;
    if (r.pair.target < 0 || r.pair.golden < 0) {
      if (!step_known) {
        step = unrecorded_optimizer_step(p);
        step_known = true;
      }
      if (i < step.size() && step[i]) continue;
      return kInf;
    }
    const CompareRow& t = p.target_rows[r.pair.target];
    const CompareRow& g = p.golden_rows[r.pair.golden];
    if (p.mode == CompareMode::kMd5) {
      if (t.md5 != g.md5) return kInf;
      continue;
    }
    worst = std::max(worst, row_discrepancy(t, g));
  }
  return worst;
}

DType mixed_precision_dtype(const PairResult& p) {
  // The API contractions decide; a dump without any (L0: modules only, as locate's first round
  // writes) is decided by its contraction modules (Linear, Conv2d, LSTM, ...) instead.
  const std::vector<EntryRows> groups = entry_groups(p);
  bool api_contractions = false;
  for (const EntryRows& g : groups) {
    if (g.golden_only) continue;
    const std::string_view name = p.target.dump.entry_name(g.entry);
    if (op_class(name) == OpClass::kContraction &&
        parse_entry_name(name).direction == Direction::kForward) {
      api_contractions = true;
      break;
    }
  }
  size_t contractions = 0, changed = 0;
  DType low = DType::kUnknown;
  for (const EntryRows& g : groups) {
    if (g.golden_only) continue;
    const std::string_view name = p.target.dump.entry_name(g.entry);
    if (parse_entry_name(name).direction != Direction::kForward) continue;
    if (api_contractions ? op_class(name) != OpClass::kContraction : !contraction_module(name))
      continue;
    bool paired = false, lowered = false;
    for (size_t i = g.begin; i < g.end; ++i) {
      const RowPair& rp = p.rows[i].pair;
      if (rp.target < 0 || rp.golden < 0) continue;
      const CompareRow& t = p.target_rows[rp.target];
      const CompareRow& gr = p.golden_rows[rp.golden];
      if (is_input(t) || t.kind != RowKind::kTensor || gr.kind != RowKind::kTensor) continue;
      paired = true;
      if (precision_change(t.element_type, gr.element_type)) {
        lowered = true;
        const DType l = low_precision_dtype(t.element_type) ? t.element_type : gr.element_type;
        low = low == DType::kUnknown ? l : coarser(low, l);
      }
    }
    contractions += paired;
    changed += lowered;
  }
  return changed > 0 && 2 * changed >= contractions ? low : DType::kUnknown;
}

namespace {

// After the walk: one-sided entries settled, suspects in execution order.
void finish(PairResult& p, Judge& j) {
  // One-sided entries no dumped entry consumed (their outputs went where nothing was dumped, or
  // through an uncaptured change) are findings when something differs after them.
  for (const auto& o : j.one_sided) {
    if (o.behind_equal) continue;  // only a diverging consumer names it
    const bool later = std::any_of(j.suspect_positions.begin(), j.suspect_positions.end(),
                                   [&](size_t at) { return at > o.position; });
    if (later) j.add_one_sided(o);
  }
  // An entry only one run has is added when its consumer is judged: restore execution order.
  std::vector<size_t> order(p.suspects.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return j.suspect_positions[a] < j.suspect_positions[b];
  });
  std::vector<FirstDivergence> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back(std::move(p.suspects[i]));
  p.suspects = std::move(sorted);
  if (p.suspects.size() > kMaxSuspects) p.suspects.resize(kMaxSuspects);
  p.regime = p.suspects.empty() ? regime_name(j.regime) : p.suspects.front().regime;
  if (!p.suspects.empty()) p.first_divergence = p.suspects.front();
}

}  // namespace

void judge_divergence(PairResult& p, double carried, const PairResult* previous,
                      bool after_bitwise_step) {
  // Names and arguments are evidence only between runs of the same framework whose rows mostly
  // paired by name: entries missing from a cross-framework or barely paired compare are the
  // pairing's limits, not the runs' differences.
  const bool same_framework = p.target.dump.framework() == p.golden.dump.framework() &&
                              pair_coverage(p) == Coverage::kCompared;
  const bool structural = same_framework && !p.mapped;
  // Modules whose runs call other APIs are judged as a whole (implementation.h). One whose results
  // differ beyond noise gets its calls judged one by one after all (a dropout left active inside
  // it, casts to bf16 and back): the walk starts again without it.
  const std::vector<ImplementationRegion> found = implementation_regions(p);
  std::vector<bool> dissolved(found.size(), false);
  std::vector<double> worst(found.size(), 0), floor(found.size(), 0);
  std::vector<Judge::Break> breaks(found.size());
  const std::vector<EntryRows> groups = entry_groups(p);
  std::unordered_map<uint32_t, size_t> target_group;  // target entry -> its group
  for (size_t i = 0; i < groups.size(); ++i)
    if (!groups[i].golden_only) target_group.emplace(groups[i].entry, i);
  // Golden entries with at least one paired row: the others exist in the golden run only.
  std::unordered_set<uint32_t> golden_paired, target_paired;
  for (const RowResult& r : p.rows) {
    if (r.pair.target < 0 || r.pair.golden < 0) continue;
    golden_paired.insert(p.golden_rows[r.pair.golden].entry);
    target_paired.insert(p.target_rows[r.pair.target].entry);
  }
  // Execution order: target entries as they ran, each entry only the golden has right after the
  // target entry paired with the golden entry that ran before it.
  std::map<uint32_t, size_t> host_of;                  // paired golden entry -> its target group
  std::vector<std::pair<size_t, size_t>> golden_only;  // (host group + 1, group), 0: before all
  for (size_t i = 0; i < groups.size(); ++i) {
    const EntryRows& g = groups[i];
    if (g.golden_only) continue;
    for (size_t k = g.begin; k < g.end; ++k) {
      const RowPair& rp = p.rows[k].pair;
      if (rp.target >= 0 && rp.golden >= 0) {
        host_of[p.golden_rows[rp.golden].entry] = i;
        break;
      }
    }
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const EntryRows& g = groups[i];
    if (!g.golden_only || golden_paired.count(g.entry)) continue;  // paired: extra golden rows
    auto it = host_of.lower_bound(g.entry);
    golden_only.emplace_back(it == host_of.begin() ? 0 : std::prev(it)->second + 1, i);
  }
  std::stable_sort(golden_only.begin(), golden_only.end());  // golden entries keep their order
  std::vector<size_t> walk;
  walk.reserve(groups.size());
  size_t next = 0;
  for (size_t i = 0; i <= groups.size(); ++i) {
    for (; next < golden_only.size() && golden_only[next].first == i; ++next)
      walk.push_back(golden_only[next].second);
    if (i < groups.size() && !groups[i].golden_only) walk.push_back(i);
  }
  for (;;) {
    Judge j(p, structural, carried, previous);
    j.after_bitwise_step = after_bitwise_step || (previous && carried == 0);
    j.mixed = p.mode == CompareMode::kMd5 ? DType::kUnknown : mixed_precision_dtype(p);
    if (j.mixed != DType::kUnknown) j.regime = Regime::kMixedPrecision;
    p.suspects.clear();
    p.first_divergence.reset();
    std::vector<const ImplementationRegion*> live;
    std::vector<size_t> live_index;
    for (size_t k = 0; k < found.size(); ++k)
      if (!dissolved[k]) {
        live.push_back(&found[k]);
        live_index.push_back(k);
      }
    j.set_regions(live);
    if (p.target.construct && p.golden.construct) {
      j.target_modules = enclosing_modules(p.target.dump, &*p.target.construct);
      j.golden_modules = enclosing_modules(p.golden.dump, &*p.golden.construct);
    }
    for (size_t k = 0; k < walk.size() && p.suspects.size() < kMaxSuspects; ++k) {
      const EntryRows& g = groups[walk[k]];
      j.position = k;
      if (j.region_of(g)) continue;  // judged where its results are consumed
      j.entry(g, !g.golden_only && target_paired.count(g.entry) != 0);
      if (j.dissolve >= 0) break;
    }
    if (j.dissolve >= 0) {
      const size_t k = live_index[static_cast<size_t>(j.dissolve)];
      dissolved[k] = true;
      breaks[k] = j.broke;
      worst[k] = j.broke.d;
      floor[k] = j.broke.tolerance;
      continue;
    }
    for (size_t k = 0; k < found.size(); ++k)
      if (dissolved[k]) j.add_region(found[k], breaks[k], groups, target_group);
    finish(p, j);
    for (size_t k = 0; k < live.size(); ++k) {
      worst[live_index[k]] = j.regions[k].worst;
      floor[live_index[k]] = j.regions[k].tolerance;
    }
    break;
  }
  p.implementations.clear();
  for (size_t k = 0; k < found.size(); ++k) {
    ImplementationDiffers d;
    d.module = std::string(p.target.dump.entry_name(found[k].module));
    d.golden_module = std::string(p.golden.dump.entry_name(found[k].golden_module));
    d.target_calls = found[k].target_calls;
    d.golden_calls = found[k].golden_calls;
    d.diverges = dissolved[k];
    d.output_discrepancy = worst[k];
    d.tolerance = floor[k];
    p.implementations.push_back(std::move(d));
  }
}

}  // namespace numprobe
