#include "graph/node_data.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/json_text.h"
#include "numprobe/error.h"

namespace numprobe::graph {
namespace {

void key(std::string& out, std::string_view k, bool& first) {
  if (!first) out += ", ";
  first = false;
  base::append_py_string(out, k);
  out += ": ";
}

void field(std::string& out, std::string_view k, std::string_view v, bool& first) {
  key(out, k, first);
  base::append_py_string(out, v);
}

// A float as msprobe's graph shows it (builder/msprobe_adapter.py _format_data): what Python would
// print in scientific notation as "{:.6e}", anything else rounded to 6 decimals.
void display_float(std::string& s, double v) {
  if (std::isnan(v)) {
    s += "nan";
    return;
  }
  if (std::isinf(v)) {
    s += v > 0 ? "inf" : "-inf";
    return;
  }
  // A node's data holds a dozen floats and a million-entry graph millions of nodes: the repr goes
  // to a stack buffer, and to_chars (printf's digits, without its locale and varargs) formats.
  char repr[base::kMaxPyFloatChars];
  const size_t n = base::format_py_float(repr, v);
  if (std::memchr(repr, 'e', n)) {
    char buf[32];
    s.append(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, 6).ptr);
    return;
  }
  // Python's round() breaks ties to even (7530.0078125 -> 7530.007812): rint in the default
  // rounding mode does too.
  base::append_py_float(s, std::rint(v * 1e6) / 1e6);
}

void stat_text(std::string& s, const StatValue& v) {
  switch (v.kind) {
    case StatKind::kFloat:
      display_float(s, v.v);
      return;
    case StatKind::kInt:
      s += std::to_string(v.i);
      return;
    case StatKind::kBool:
      s += v.v != 0 ? "True" : "False";
      return;
    default:
      s += "None";
  }
}

// A relative error in percent as msprobe's graph shows it: as Python prints it when that takes at
// most six decimals or scientific notation ("50.0%", "93.75%", "8.118674038667216e-05%"), else
// with six decimals ("1.010900%").
void percent_text(std::string& s, double v) {
  if (!std::isfinite(v)) {
    display_float(s, v);
  } else {
    char buf[base::kMaxPyFloatChars];
    const std::string_view repr(buf, base::format_py_float(buf, v));
    const size_t dot = repr.find('.');
    if (repr.find('e') != std::string_view::npos || dot == std::string_view::npos ||
        repr.size() - dot - 1 <= 6) {
      s += repr;
    } else {
      char fixed[64];  // under 1e16 here (larger has an exponent): at most 24 characters
      s.append(fixed,
               std::to_chars(fixed, fixed + sizeof fixed, v, std::chars_format::fixed, 6).ptr);
    }
  }
  s += '%';
}

std::string shape_text(const CompareRow& r) {
  std::string s = "[";
  for (size_t i = 0; i < r.shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(r.shape[i]);
  }
  return s + "]";
}

// "torch.float32" -> "torch.Tensor"; "Float32" (MindSpore) -> "mindspore.Tensor";
// "<class 'int'>" -> "int".
std::string type_text(const CompareRow& r) {
  if (r.kind == RowKind::kTensor)
    return r.dtype.rfind("torch.", 0) == 0 ? "torch.Tensor" : "mindspore.Tensor";
  std::string_view d = r.dtype;
  const size_t q = d.find('\'');
  if (q != std::string_view::npos) {
    const size_t e = d.find('\'', q + 1);
    if (e != std::string_view::npos) return std::string(d.substr(q + 1, e - q - 1));
  }
  return std::string(d);
}

bool is_input_state(RowState s) {
  return s != RowState::kOutput;
}

}  // namespace

SideRows index_rows(const RowSet& rows, size_t entries) {
  SideRows s;
  s.rows = &rows;
  s.first.assign(entries, 0);
  s.count.assign(entries, 0);
  s.result.assign(rows.size(), -1);
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint32_t e = rows[i].entry;
    if (e >= entries) continue;
    if (s.count[e] == 0) s.first[e] = static_cast<uint32_t>(i);
    ++s.count[e];
  }
  return s;
}

void link_results(const PairResult& p, SideRows& target, SideRows& golden) {
  if (p.rows.size() > static_cast<size_t>(INT32_MAX))
    throw Error("graph: more than 2^31 compare rows in one pair");
  for (size_t i = 0; i < p.rows.size(); ++i) {
    const RowPair& rp = p.rows[i].pair;
    if (rp.target >= 0) target.result[static_cast<size_t>(rp.target)] = static_cast<int32_t>(i);
    if (rp.golden >= 0) golden.result[static_cast<size_t>(rp.golden)] = static_cast<int32_t>(i);
  }
}

NodeDataWriter::NodeDataWriter(const PairResult* p) : p_(p) {}

void NodeDataWriter::row_fields(std::string& out, const CompareRow& r, const RowResult* result) {
  out += '{';
  bool first = true;
  if (r.kind == RowKind::kNone) {
    field(out, "value", "null", first);
  } else {
    field(out, "type", type_text(r), first);
    // msprobe's graph drops the quotes of "<class 'int'>".
    std::string dtype(r.dtype);
    dtype.erase(std::remove(dtype.begin(), dtype.end(), '\''), dtype.end());
    field(out, "dtype", dtype, first);
    if (r.has_shape) field(out, "shape", shape_text(r), first);
    if (r.kind == RowKind::kScalar) {
      std::string v;
      stat_text(v, r.max);
      field(out, "value", v, first);
    }
    const std::pair<const char*, const StatValue*> stats[] = {
        {"Max", &r.max}, {"Min", &r.min}, {"Mean", &r.mean}, {"Norm", &r.norm}};
    for (const auto& [name, v] : stats) {
      if (v->kind == StatKind::kAbsent) continue;
      std::string t;
      stat_text(t, *v);
      field(out, name, t, first);
    }
    field(out, "requires_grad", r.requires_grad < 0 ? "null" : (r.requires_grad ? "True" : "False"),
          first);
    // msprobe shows md5 only in md5 mode.
    if (!r.md5.empty() && p_ && p_->mode == CompareMode::kMd5) field(out, "md5", r.md5, first);
    field(out, "data_name", r.data_name.empty() ? std::string_view("-1") : r.data_name, first);
  }
  if (result && p_) metrics(out, r, *result, first);
  out += '}';
}

// msprobe's metric columns of the mode (the compare table's, GraphConst.*_INDEX_LIST) and
// numprobe's verdict, straight from the compare row.
void NodeDataWriter::metrics(std::string& out, const CompareRow& t, const RowResult& res,
                             bool& first) {
  const PairResult& p = *p_;
  const bool both = res.pair.target >= 0 && res.pair.golden >= 0;
  const CompareRow* g = both ? &p.golden_rows[static_cast<size_t>(res.pair.golden)] : nullptr;
  std::string v;
  auto number = [&](const char* name, bool has, double x, bool integral = false) {
    v.clear();
    if (!has) {
      v = "N/A";
    } else if (integral && std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9e15) {
      v = std::to_string(static_cast<int64_t>(x));  // an int64 counter differs by an integer
    } else {
      display_float(v, x);
    }
    field(out, name, v, first);
  };
  switch (p.mode) {
    case CompareMode::kStatistics: {
      const StatisticsMetrics m = row_statistics(p, res);
      const bool ints = both && t.max.kind == StatKind::kInt && g->max.kind == StatKind::kInt;
      const std::pair<const char*, const StatDiff*> diffs[] = {{"Max diff", &m.max},
                                                               {"Min diff", &m.min},
                                                               {"Mean diff", &m.mean},
                                                               {"L2norm diff", &m.norm}};
      for (const auto& [name, d] : diffs) number(name, both && d->has_diff, d->diff, ints);
      const std::pair<const char*, const StatDiff*> rels[] = {{"MaxRelativeErr", &m.max},
                                                              {"MinRelativeErr", &m.min},
                                                              {"MeanRelativeErr", &m.mean},
                                                              {"NormRelativeErr", &m.norm}};
      for (const auto& [name, d] : rels) {
        v.clear();
        if (both && d->has_rel) {
          percent_text(v, d->rel_percent);
        } else {
          v = "N/A";
        }
        field(out, name, v, first);
      }
      break;
    }
    case CompareMode::kTensor: {
      const TensorMetrics& m = res.tensor;
      number("Cosine", both && m.has_cosine, m.cosine);
      number("EucDist", both && m.has_euclidean, m.euclidean);
      number("MaxAbsErr", both && m.has_errors, m.max_abs);
      number("MaxRelativeErr", both && m.has_errors, m.max_rel);
      number("One Thousandth Err Ratio", both && m.has_ratios, m.one_thousandth);
      number("Five Thousandths Err Ratio", both && m.has_ratios, m.five_thousandths);
      break;
    }
    case CompareMode::kMd5:
      break;
  }
  field(out, "Requires_grad Consistent", requires_grad_consistent(p, res) ? "True" : "False",
        first);
  if (p.mode == CompareMode::kMd5) {
    // As the compare table: rows of another shape or dtype are different whatever their bytes.
    const bool alike = both && t.dtype == g->dtype && t.shape == g->shape;
    field(out, "Result", !both ? "N/A" : alike ? md5_result(t, *g) : "Different", first);
  }
  field(out, "Status", row_status_name(res.status), first);
  field(out, "Match", match_kind_name(res.pair.how), first);
  if (!res.reason.empty()) field(out, "Reason", res.reason, first);
  if (!res.message.empty()) field(out, "Err_message", res.message, first);
}

void NodeDataWriter::render(const SideRows& side, int64_t entry, bool with_metrics,
                            std::string& input, std::string& output) {
  input = "{";
  output = "{";
  if (entry >= 0 && static_cast<size_t>(entry) < side.count.size()) {
    bool first_in = true, first_out = true;
    const uint32_t begin = side.first[static_cast<size_t>(entry)];
    for (uint32_t i = begin; i < begin + side.count[static_cast<size_t>(entry)]; ++i) {
      const CompareRow& r = (*side.rows)[i];
      const int64_t res = side.result.empty() ? -1 : side.result[i];
      const RowResult* rr =
          with_metrics && res >= 0 ? &p_->rows[static_cast<size_t>(res)] : nullptr;
      std::string& out = is_input_state(r.state) ? input : output;
      bool& first = is_input_state(r.state) ? first_in : first_out;
      key(out, r.name, first);
      row_fields(out, r, rr);
    }
  }
  input += '}';
  output += '}';
}

namespace {

// msprobe paints a node darkest when the target's max or min is NaN or infinite. numprobe does so
// too, except for an infinity the golden has in the same place: a masked_fill with -inf or a
// causal mask is the computation, not a fault, and must not outshine the real first divergence.
bool alarming(const StatValue& t, const StatValue& g) {
  if (t.kind != StatKind::kFloat || std::isfinite(t.v)) return false;
  return !(std::isinf(t.v) && g.kind == StatKind::kFloat && g.v == t.v);
}

}  // namespace

std::optional<double> precision_of(const PairResult& p, const SideRows& t, int64_t entry) {
  if (entry < 0 || static_cast<size_t>(entry) >= t.count.size()) return std::nullopt;
  const uint32_t begin = t.first[static_cast<size_t>(entry)];
  const uint32_t end = begin + t.count[static_cast<size_t>(entry)];
  bool compared = false;
  switch (p.mode) {
    case CompareMode::kMd5: {
      double v = 1;
      for (uint32_t i = begin; i < end; ++i) {
        if (t.result[i] < 0) continue;
        const RowResult& r = p.rows[static_cast<size_t>(t.result[i])];
        if (r.pair.golden < 0) continue;
        compared = true;
        if (r.status != RowStatus::kPass) v = 0;
      }
      return compared ? std::optional<double>(v) : std::nullopt;
    }
    case CompareMode::kStatistics: {
      double v = 0;
      for (uint32_t i = begin; i < end; ++i) {
        const CompareRow& row = (*t.rows)[i];
        if (row.state != RowState::kOutput || t.result[i] < 0) continue;
        const RowResult& r = p.rows[static_cast<size_t>(t.result[i])];
        if (r.pair.golden < 0) continue;
        compared = true;
        const StatisticsMetrics m = row_statistics(p, r);
        for (const StatDiff* d : {&m.max, &m.min, &m.mean, &m.norm}) {
          if (d->has_rel && !std::isnan(d->rel_percent)) v = std::max(v, d->rel_percent / 100);
        }
        const CompareRow& g = p.golden_rows[static_cast<size_t>(r.pair.golden)];
        if (alarming(row.max, g.max) || alarming(row.min, g.min)) v = 1;
      }
      return compared ? std::optional<double>(std::min(v, 1.0)) : std::nullopt;
    }
    case CompareMode::kTensor: {
      // min over each side's tensor rows (1 when none); a NaN/inf output statistic -> 1, a NaN/inf
      // input statistic (with finite outputs) -> 0.
      double in = 1, out = 1;
      bool in_bad = false, out_bad = false, any_in = false, any_out = false;
      for (uint32_t i = begin; i < end; ++i) {
        const CompareRow& row = (*t.rows)[i];
        if (t.result[i] < 0) continue;
        const RowResult& r = p.rows[static_cast<size_t>(t.result[i])];
        if (r.pair.golden < 0) continue;
        compared = true;
        const bool is_out = row.state == RowState::kOutput;
        const CompareRow& g = p.golden_rows[static_cast<size_t>(r.pair.golden)];
        if (alarming(row.max, g.max) || alarming(row.min, g.min))
          (is_out ? out_bad : in_bad) = true;
        if (row.kind != RowKind::kTensor || !r.tensor.has_ratios) continue;
        (is_out ? out : in) = std::min(is_out ? out : in, r.tensor.one_thousandth);
        (is_out ? any_out : any_in) = true;
      }
      if (!compared) return std::nullopt;
      if (out_bad) return 1.0;
      if (in_bad || !any_in || !any_out) return 0.0;
      return std::clamp(in - out, 0.0, 1.0);
    }
  }
  return std::nullopt;
}

}  // namespace numprobe::graph
