// CSV and summary.json writers for compare results.
#include <cmath>

#include "format/py_json_writer.h"
#include "numprobe/compare.h"

namespace numprobe {
namespace {

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s;
  format::append_py_float(s, v);
  return s;
}

std::string stat_cell(const StatValue& s) {
  switch (s.kind) {
    case StatKind::kFloat:
      return num(s.v);
    case StatKind::kInt:
      return std::to_string(s.i);
    case StatKind::kBool:
      return s.v != 0 ? "True" : "False";
    default:
      return "None";
  }
}

std::string shape_cell(const CompareRow& r) {
  if (!r.has_shape) return "None";
  std::string s = "[";
  for (size_t i = 0; i < r.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(r.shape[i]);
  return s + "]";
}

std::string rg_cell(int8_t rg) {
  return rg < 0 ? "N/A" : (rg ? "True" : "False");
}

// Text a spreadsheet would run as a formula: =, +, -, @, %, tab, CR, or their full-width forms
// (U+FF1D, U+FF0B, U+FF0D, U+FF20, U+FF05).
bool starts_like_formula(std::string_view v) {
  if (v.empty()) return false;
  switch (v[0]) {
    case '=':
    case '+':
    case '-':
    case '@':
    case '%':
    case '\t':
    case '\r':
      return true;
    default:
      break;
  }
  if (v.size() >= 3 && v[0] == '\xef' && (v[1] == '\xbc')) {
    const unsigned char c = static_cast<unsigned char>(v[2]);
    return c == 0x9d || c == 0x8b || c == 0x8d || c == 0xa0 || c == 0x85;
  }
  return false;
}

// Appends one CSV cell: RFC 4180 quoting, and a leading "'" on text that starts like a formula.
void cell(std::string& out, std::string_view v, bool text = true) {
  if (!out.empty() && out.back() != '\n') out += ',';
  const bool quote = v.find_first_of(",\"\n\r") != std::string_view::npos;
  if (quote) out += '"';
  if (text && starts_like_formula(v)) out += '\'';
  if (!quote) {
    out.append(v.data(), v.size());
    return;
  }
  size_t from = 0;
  for (size_t q = v.find('"'); q != std::string_view::npos; q = v.find('"', q + 1)) {
    out.append(v.data() + from, q + 1 - from);
    out += '"';
    from = q + 1;
  }
  out.append(v.data() + from, v.size() - from);
  out += '"';
}

void num_cell(std::string& out, bool has, double v) {
  cell(out, has ? num(v) : "N/A", false);
}

// The metrics behind a verdict. JSON has no NaN/Inf: those are written as strings so strict
// readers load the summary.
void write_evidence(format::PyJsonWriter& w, const PairResult& p, const RowResult& r) {
  auto number = [&](const char* k, bool has, double v) {
    w.key(k);
    if (!has) {
      w.null_value();
    } else if (!std::isfinite(v)) {
      w.string_value(num(v));
    } else {
      w.float_value(v);
    }
  };
  w.begin_object();
  w.key("status");
  w.string_value(row_status_name(r.status));
  w.key("code");
  w.string_value(r.reason);
  w.key("message");
  w.string_value(r.message);
  if (r.pair.target >= 0 && r.pair.golden >= 0) {
    const CompareRow& t = p.target_rows[r.pair.target];
    const CompareRow& g = p.golden_rows[r.pair.golden];
    if (p.mode == CompareMode::kMd5) {
      w.key("target_md5");
      w.string_value(t.md5);
      w.key("golden_md5");
      w.string_value(g.md5);
    } else {
      if (p.mode == CompareMode::kTensor) {
        number("cosine", r.tensor.has_cosine, r.tensor.cosine);
        number("max_abs_err", r.tensor.has_errors, r.tensor.max_abs);
        number("max_rel_err", r.tensor.has_errors, r.tensor.max_rel);
        number("one_thousandth_ratio", r.tensor.has_ratios, r.tensor.one_thousandth);
      }
      const char* names[] = {"max", "min", "mean", "norm"};
      const StatValue* ts[] = {&t.max, &t.min, &t.mean, &t.norm};
      const StatValue* gs[] = {&g.max, &g.min, &g.mean, &g.norm};
      const StatDiff* ds[] = {&r.stats.max, &r.stats.min, &r.stats.mean, &r.stats.norm};
      for (int i = 0; i < 4; ++i) {
        w.key(names[i]);
        w.begin_object();
        number("target", ts[i]->has_number(), ts[i]->v);
        number("golden", gs[i]->has_number(), gs[i]->v);
        number("diff", ds[i]->has_diff, ds[i]->diff);
        number("rel_percent", ds[i]->has_rel, ds[i]->rel_percent);
        w.end_object();
      }
    }
  }
  w.end_object();
}

}  // namespace

std::string render_compare_csv(const PairResult& p, bool with_stack) {
  std::vector<std::string> header = {
      "NPU Name",         "Bench Name",         "NPU Dtype",         "Bench Dtype",
      "NPU Tensor Shape", "Bench Tensor Shape", "NPU Requires_grad", "Bench Requires_grad"};
  switch (p.mode) {
    case CompareMode::kTensor:
      header.insert(header.end(), {"Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
                                   "One Thousandth Err Ratio", "Five Thousandths Err Ratio"});
      break;
    case CompareMode::kStatistics:
      header.insert(header.end(),
                    {"Max diff", "Min diff", "Mean diff", "L2norm diff", "MaxRelativeErr",
                     "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr"});
      break;
    case CompareMode::kMd5:
      header.insert(header.end(), {"NPU MD5", "BENCH MD5"});
      break;
  }
  if (p.mode != CompareMode::kMd5) {
    header.insert(header.end(), {"NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max",
                                 "Bench min", "Bench mean", "Bench l2norm"});
  }
  header.insert(header.end(),
                {"Requires_grad Consistent", "Status", "Match", "Reason", "Err_message"});
  if (with_stack) header.push_back("NPU_Stack_Info");
  if (p.mode == CompareMode::kTensor) header.push_back("Data_name");

  std::string out;
  for (const auto& h : header) cell(out, h);
  out += '\n';
  static const CompareRow kNone{};
  for (const RowResult& r : p.rows) {
    const bool ht = r.pair.target >= 0, hg = r.pair.golden >= 0;
    const CompareRow& t = ht ? p.target_rows[r.pair.target] : kNone;
    const CompareRow& g = hg ? p.golden_rows[r.pair.golden] : kNone;
    auto side = [&](bool has, const std::string& v) { return has ? v : std::string("N/A"); };
    cell(out, side(ht, t.name));
    cell(out, side(hg, g.name));
    cell(out, side(ht, t.dtype));
    cell(out, side(hg, g.dtype));
    cell(out, side(ht, shape_cell(t)));
    cell(out, side(hg, shape_cell(g)));
    cell(out, ht ? rg_cell(t.requires_grad) : "N/A");
    cell(out, hg ? rg_cell(g.requires_grad) : "N/A");
    const bool both = ht && hg;
    switch (p.mode) {
      case CompareMode::kTensor: {
        const TensorMetrics& m = r.tensor;
        num_cell(out, both && m.has_cosine, m.cosine);
        num_cell(out, both && m.has_euclidean, m.euclidean);
        num_cell(out, both && m.has_errors, m.max_abs);
        num_cell(out, both && m.has_errors, m.max_rel);
        num_cell(out, both && m.has_ratios, m.one_thousandth);
        num_cell(out, both && m.has_ratios, m.five_thousandths);
        break;
      }
      case CompareMode::kStatistics: {
        const StatDiff* d[] = {&r.stats.max, &r.stats.min, &r.stats.mean, &r.stats.norm};
        for (const StatDiff* x : d) num_cell(out, both && x->has_diff, x->diff);
        for (const StatDiff* x : d)
          cell(out, both && x->has_rel ? num(x->rel_percent) + "%" : "N/A", false);
        break;
      }
      case CompareMode::kMd5:
        cell(out, side(ht, t.md5));
        cell(out, side(hg, g.md5));
        break;
    }
    if (p.mode != CompareMode::kMd5) {
      for (const StatValue* s : {&t.max, &t.min, &t.mean, &t.norm})
        cell(out, ht ? stat_cell(*s) : "N/A", false);
      for (const StatValue* s : {&g.max, &g.min, &g.mean, &g.norm})
        cell(out, hg ? stat_cell(*s) : "N/A", false);
    }
    cell(out, both && t.requires_grad == g.requires_grad ? "True" : "False");
    cell(out, row_status_name(r.status));
    cell(out, match_kind_name(r.pair.how));
    cell(out, r.reason);
    cell(out, r.message);
    if (with_stack) {
      std::string frames;
      const std::vector<uint32_t>* f =
          ht && p.target.stack ? p.target.stack->frames_of(t.name.substr(0, t.suffix_at)) : nullptr;
      if (f) {
        for (uint32_t id : *f) frames += std::string(p.target.stack->strings.get(id)) + "\n";
      }
      if (!frames.empty()) frames.pop_back();
      cell(out, frames.empty() ? "N/A" : frames);
    }
    if (p.mode == CompareMode::kTensor) {
      cell(out, "[" + side(ht, t.data_name) + ", " + side(hg, g.data_name) + "]");
    }
    out += '\n';
  }
  return out;
}

std::string render_summary_json(const CompareReport& rep) {
  std::string out;
  format::PyJsonWriter w(out, 1, 0);
  w.begin_object();
  w.key("mode");
  w.string_value(rep.pairs.empty() ? "none" : compare_mode_name(rep.pairs[0].mode));
  w.key("pairs");
  w.begin_array();
  for (const PairResult& p : rep.pairs) {
    w.begin_object();
    w.key("step");
    w.int_value(p.target_where.step);
    w.key("rank");
    w.int_value(p.target_where.rank);
    w.key("target");
    w.string_value(p.target_where.dump_json);
    w.key("golden");
    w.string_value(p.golden_where.dump_json);
    auto count = [&](const char* k, size_t v) {
      w.key(k);
      w.int_value(static_cast<int64_t>(v));
    };
    count("rows", p.rows.size());
    count("matched", p.matched);
    count("pass", p.pass);
    count("warning", p.warning);
    count("error", p.error);
    count("unmatched_target", p.unmatched_target);
    count("unmatched_golden", p.unmatched_golden);
    w.key("first_divergence");
    if (!p.first_divergence) {
      w.null_value();
    } else {
      const FirstDivergence& f = *p.first_divergence;
      w.begin_object();
      w.key("entry");
      w.string_value(f.entry);
      w.key("row");
      w.string_value(f.row);
      w.key("direction");
      w.string_value(f.direction);
      w.key("module");
      if (f.module.empty()) {
        w.null_value();
      } else {
        w.string_value(f.module);
      }
      w.key("reason");
      w.string_value(f.reason);
      auto discrepancy = [&](const char* k, double v) {
        w.key(k);
        if (std::isfinite(v))
          w.float_value(v);
        else
          w.string_value("inf");
      };
      discrepancy("input_discrepancy", f.input_discrepancy);
      discrepancy("output_discrepancy", f.output_discrepancy);
      discrepancy("tolerance", f.tolerance);
      w.key("evidence");
      write_evidence(w, p, p.rows[f.row_index]);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();
  w.key("problems");
  w.begin_array();
  for (const auto& s : rep.problems) w.string_value(s);
  w.end_array();
  w.end_object();
  return out;
}

}  // namespace numprobe
