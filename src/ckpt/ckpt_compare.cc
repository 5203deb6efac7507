#include "ckpt/ckpt_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>

#include "numprobe/compare/tensor_metrics.h"

namespace numprobe::ckpt {

const char* status_name(ParamStatus s) {
  switch (s) {
    case ParamStatus::kPass:
      return "pass";
    case ParamStatus::kWarning:
      return "warning";
    case ParamStatus::kError:
      return "error";
  }
  return "error";
}

namespace {

void fail(ParamResult& r, std::string why) {
  r.status = ParamStatus::kError;
  r.reason = std::move(why);
}

std::string num(double v) {
  char b[32];
  snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// One element: msprobe's cosine of two scalars is their sign agreement (1 when both are 0).
double scalar_cos(const void* a, DType ta, const void* b, DType tb) {
  double x = 0, y = 0;
  decode_to_double(a, 1, ta, &x);
  decode_to_double(b, 1, tb, &y);
  if (x == 0 && y == 0) return 1.0;
  if (x == 0 || y == 0) return NAN;
  return (x > 0) == (y > 0) ? 1.0 : -1.0;
}

void judge(ParamResult& r, const TensorMetrics& m, size_t numel) {
  if (m.reason == TensorVerdictReason::kNanInfMismatch)
    return fail(r, "NaN/Inf at different positions or of different signs");
  if (m.has_errors) {
    r.max_abs = m.max_abs;
    r.max_rel = m.max_rel;
  }
  if (m.has_euclidean) r.l2 = m.euclidean;
  if (m.has_cosine && !std::isnan(m.cosine)) r.cos = m.cosine;
  if (numel == 0) {
    r.l2 = 0.0;
    r.cos = 1.0;
    return;
  }
  if (m.cosine_zero_side || (r.cos && std::isnan(*r.cos)))
    return fail(r, "one side is all zeros, the other is not");
  const double rel = r.max_rel.value_or(0);
  if (numel == 1) {
    if (rel > kWarnMaxRel) return fail(r, "max rel error " + num(rel) + " > " + num(kWarnMaxRel));
    if (rel > kPassMaxRel) {
      r.status = ParamStatus::kWarning;
      r.reason = "max rel error " + num(rel) + " > " + num(kPassMaxRel);
    }
    return;
  }
  const double cos = r.cos.value_or(0);
  if (cos < kWarnCos) return fail(r, "cos " + num(cos) + " < " + num(kWarnCos));
  if (cos < kPassCos) {
    r.status = ParamStatus::kWarning;
    r.reason = "cos " + num(cos) + " < " + num(kPassCos);
  } else if (rel > kPassMaxRel) {
    r.status = ParamStatus::kWarning;
    r.reason = "max rel error " + num(rel) + " > " + num(kPassMaxRel);
  }
}

ParamResult compare_pair(const Checkpoint& a, const TensorEntry& ta, const Checkpoint& b,
                         const TensorEntry& tb, std::vector<uint8_t>& sa, std::vector<uint8_t>& sb,
                         CompareSummary& s) {
  ParamResult r;
  r.name = ta.name;
  r.numel_a = ta.count;
  r.numel_b = tb.count;
  r.shape_a = ta.shape;
  r.shape_b = tb.shape;
  r.dtype_a = ta.dtype != DType::kUnknown ? std::string(dtype_name(ta.dtype)) : ta.dtype_text;
  r.dtype_b = tb.dtype != DType::kUnknown ? std::string(dtype_name(tb.dtype)) : tb.dtype_text;
  if (ta.shape != tb.shape) {
    ++s.shape_mismatch;
    fail(r, "shapes differ");
    return r;
  }
  if (ta.dtype == DType::kUnknown || tb.dtype == DType::kUnknown) {
    fail(r, "dtype " + (ta.dtype == DType::kUnknown ? ta.dtype_text : tb.dtype_text) +
                " cannot be compared");
    return r;
  }
  const void* pa = a.data(ta, sa);
  const void* pb = b.data(tb, sb);
  // b is the baseline (msprobe's ckpt2): relative errors are |a - b| / |b|.
  const TensorMetrics m =
      tensor_metrics(pa, ta.dtype, ta.count, pb, tb.dtype, tb.count, tb.dtype, false);
  judge(r, m, ta.count);
  if (ta.count == 1 && r.max_abs) {
    const double c = scalar_cos(pa, ta.dtype, pb, tb.dtype);
    if (!std::isnan(c)) r.cos = c;
  }
  r.compared = true;
  s.bytes += ta.bytes() + tb.bytes();
  a.release(ta);
  b.release(tb);
  if (ta.dtype != tb.dtype) {
    ++s.dtype_mismatch;
    if (r.status == ParamStatus::kPass) r.status = ParamStatus::kWarning;
    r.reason = "dtypes differ (" + r.dtype_a + " vs " + r.dtype_b + ")" +
               (r.reason.empty() ? "" : "; " + r.reason);
  }
  return r;
}

ParamResult one_sided(const TensorEntry& t, char side) {
  ParamResult r;
  r.name = t.name;
  r.only_in = side;
  (side == 'a' ? r.numel_a : r.numel_b) = t.count;
  (side == 'a' ? r.shape_a : r.shape_b) = t.shape;
  (side == 'a' ? r.dtype_a : r.dtype_b) =
      t.dtype != DType::kUnknown ? std::string(dtype_name(t.dtype)) : t.dtype_text;
  fail(r, std::string("only in checkpoint ") + side);
  return r;
}

}  // namespace

void sort_worst_first(std::vector<ParamResult>& params) {
  std::stable_sort(params.begin(), params.end(), [](const ParamResult& x, const ParamResult& y) {
    if (x.status != y.status) return x.status > y.status;
    // Missing metrics sort before present ones: they are the least comparable.
    const double cx = x.cos.value_or(-INFINITY), cy = y.cos.value_or(-INFINITY);
    if (cx != cy) return cx < cy;
    const double lx = x.l2.value_or(INFINITY), ly = y.l2.value_or(INFINITY);
    if (lx != ly) return lx > ly;
    return x.name < y.name;
  });
}

CkptCompareResult compare_checkpoints(const Checkpoint& a, const Checkpoint& b) {
  CkptCompareResult out;
  CompareSummary& s = out.summary;
  std::map<std::string_view, const TensorEntry*> in_b;
  for (const TensorEntry& t : b.tensors()) in_b.emplace(t.name, &t);
  std::vector<const TensorEntry*> order;
  for (const TensorEntry& t : a.tensors()) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const TensorEntry* x, const TensorEntry* y) {
    return x->file != y->file ? x->file < y->file : x->begin < y->begin;
  });
  std::vector<uint8_t> sa, sb;  // strided torch views only
  for (const TensorEntry* ta : order) {
    auto it = in_b.find(ta->name);
    if (it == in_b.end()) {
      ++s.only_a;
      out.params.push_back(one_sided(*ta, 'a'));
      continue;
    }
    out.params.push_back(compare_pair(a, *ta, b, *it->second, sa, sb, s));
    if (out.params.back().compared) ++s.compared;
    in_b.erase(it);
  }
  for (const TensorEntry& t : b.tensors())
    if (in_b.count(t.name)) {
      ++s.only_b;
      out.params.push_back(one_sided(t, 'b'));
    }
  for (const ParamResult& r : out.params) {
    if (r.status == ParamStatus::kPass) ++s.pass;
    if (r.status == ParamStatus::kWarning) ++s.warning;
    if (r.status == ParamStatus::kError) ++s.error;
  }
  sort_worst_first(out.params);
  return out;
}

}  // namespace numprobe::ckpt
