// The grad-compare page: one self-contained HTML file (no script, no external resource), styled as
// numprobe monitor-report's page, with one inline SVG chart per rank (the summary similarity) and
// one per parameter, the threshold drawn, and the first disagreement marked. Every text from the
// runs (parameter names, paths) is HTML-escaped.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "grad_probe/grad_compare.h"
#include "grad_probe/grad_summary.h"
#include "monitor/py_text.h"

namespace numprobe::grad_probe {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string fmt(double v) {
  char b[32];
  snprintf(b, sizeof b, "%.1f", v);
  return b;
}

constexpr double kW = 640, kH = 180, kL = 48, kR = 12, kT = 10, kB = 26;

// A chart of similarity (y in [lo, 1]) over steps; `mark` is the index of a step to circle.
std::string chart(const std::string& title, const std::vector<int64_t>& steps,
                  const std::vector<double>& y, double threshold, long mark) {
  double lo = threshold;
  for (double v : y)
    if (!std::isnan(v)) lo = std::min(lo, v);
  lo = std::max(0.0, std::floor((lo - 0.02) * 20) / 20);
  const double x0 = double(steps.front()), x1 = double(std::max(steps.back(), steps.front() + 1));
  auto px = [&](double s) { return kL + (s - x0) / (x1 - x0) * (kW - kL - kR); };
  auto py = [&](double v) { return kT + (1.0 - v) / (1.0 - lo) * (kH - kT - kB); };
  std::string o = "<div class=\"chart\"><div class=\"title\">" + esc(title) +
                  "</div>\n<svg width=\"" + fmt(kW) + "\" height=\"" + fmt(kH) + "\" role=\"img\">";
  o += "<rect x=\"" + fmt(kL) + "\" y=\"" + fmt(kT) + "\" width=\"" + fmt(kW - kL - kR) +
       "\" height=\"" + fmt(kH - kT - kB) + "\" class=\"frame\"/>";
  for (double v : {lo, (lo + 1) / 2, 1.0}) {
    o += "<text x=\"" + fmt(kL - 4) + "\" y=\"" + fmt(py(v) + 4) + "\" text-anchor=\"end\">" +
         monitor::py_float_str(std::round(v * 1000) / 1000) + "</text>";
  }
  o += "<line x1=\"" + fmt(kL) + "\" x2=\"" + fmt(kW - kR) + "\" y1=\"" + fmt(py(threshold)) +
       "\" y2=\"" + fmt(py(threshold)) + "\" class=\"threshold\"/>";
  o += "<text x=\"" + fmt(kL) + "\" y=\"" + fmt(kH - 6) + "\">step " +
       std::to_string(steps.front()) + "</text><text x=\"" + fmt(kW - kR) + "\" y=\"" +
       fmt(kH - 6) + "\" text-anchor=\"end\">step " + std::to_string(steps.back()) + "</text>";
  std::string pts;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (std::isnan(y[i])) {  // a gap breaks the line
      if (!pts.empty()) o += "<polyline points=\"" + pts + "\" class=\"line\"/>";
      pts.clear();
      continue;
    }
    pts += fmt(px(double(steps[i]))) + "," + fmt(py(y[i])) + " ";
  }
  if (!pts.empty()) o += "<polyline points=\"" + pts + "\" class=\"line\"/>";
  for (size_t i = 0; i < steps.size(); ++i) {
    if (std::isnan(y[i])) continue;
    const bool m = long(i) == mark;
    o += "<circle cx=\"" + fmt(px(double(steps[i]))) + "\" cy=\"" + fmt(py(y[i])) + "\" r=\"" +
         (m ? "6" : "2.5") + "\" class=\"" + (m ? "marker" : "point") + "\"><title>step " +
         std::to_string(steps[i]) + ": " + monitor::py_float_str(y[i]) + "</title></circle>";
  }
  return o + "</svg></div>\n";
}

}  // namespace

std::string render_grad_compare_html(const GradCompareResult& r) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>numprobe grad-compare</title>\n<style>\n"
      "body { font: 14px system-ui, sans-serif; margin: 16px; color: #222; }\n"
      "header h1 { font-size: 20px; margin: 0 0 8px 0; }\n"
      ".chart { margin: 12px 0 24px; display: inline-block; margin-right: 16px; }\n"
      ".chart .title { font-family: monospace; font-size: 12px; }\n"
      "svg text { font-size: 11px; fill: #555; }\n"
      ".frame { fill: none; stroke: #ccc; } .line { fill: none; stroke: #1f77b4; stroke-width: "
      "1.5; }\n"
      ".threshold { stroke: #ff7f0e; stroke-dasharray: 4 3; } .point { fill: #1f77b4; }\n"
      ".marker { fill: rgba(214, 39, 40, 0.25); stroke: #d62728; stroke-width: 2; }\n"
      "table { border-collapse: collapse; }\n"
      "td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; "
      "}\n"
      ".verdict { font-weight: 600; } .bad { color: #d62728; } .good { color: #2ca02c; }\n"
      "</style>\n</head>\n<body>\n<header><h1>numprobe grad-compare</h1></header>\n";
  h += "<p>run1 <code>" + esc(r.run1) + "</code><br>run2 <code>" + esc(r.run2) +
       "</code><br>direction similarity (share of elements whose gradient sign agrees); a "
       "parameter disagrees below " +
       monitor::py_float_str(r.options.threshold) + " or on a drop of more than " +
       monitor::py_float_str(r.options.drop) + " since its previous step</p>\n";
  if (r.first) {
    h += "<p class=\"verdict bad\">first disagreement: step " + std::to_string(r.first->step) +
         ", rank " + std::to_string(r.first->rank) + ", parameter <code>" +
         esc(r.first->parameter) + "</code>, similarity " +
         monitor::py_float_str(r.first->similarity) + " (" + r.first->rule + ")</p>\n";
  } else {
    h += "<p class=\"verdict good\">the runs agree at every compared step</p>\n";
  }
  if (!r.gaps.empty()) {
    h += "<h2>Gaps</h2>\n<table><thead><tr><th>rank</th><th>step</th><th>parameter</th>"
         "<th>what</th></tr></thead><tbody>\n";
    for (const auto& g : r.gaps)
      h += "<tr><td>" + std::to_string(g.rank) + "</td><td>" +
           (g.step < 0 ? std::string("all") : std::to_string(g.step)) + "</td><td>" +
           esc(g.parameter) + "</td><td>" + esc(g.what) + "</td></tr>\n";
    h += "</tbody></table>\n";
  }
  for (const auto& rc : r.ranks) {
    if (rc.steps.empty()) continue;
    h += "<h2>rank " + std::to_string(rc.rank) + "</h2>\n";
    long mark_col = -1;
    if (r.first && r.first->rank == rc.rank)
      for (size_t i = 0; i < rc.steps.size(); ++i)
        if (rc.steps[i] == r.first->step) mark_col = long(i);
    h += chart("summary (all parameters, weighted by size)", rc.steps, rc.summary,
               r.options.threshold, -1);
    for (const auto& p : rc.params) {
      const bool marked = r.first && r.first->rank == rc.rank && r.first->parameter == p.name;
      h += chart(p.name, rc.steps, p.similarity, r.options.threshold, marked ? mark_col : -1);
    }
  }
  return h + "</body>\n</html>\n";
}

}  // namespace numprobe::grad_probe
