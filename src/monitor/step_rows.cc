#include "monitor/step_rows.h"

#include <cmath>
#include <iterator>
#include <limits>

namespace numprobe::monitor {
namespace {

// The groups in the order msprobe writes a step's files (step_final_hook).
constexpr MetricGroup kWriteOrder[] = {
    MetricGroup::kActv,        MetricGroup::kActvGrad,     MetricGroup::kGradUnreduced,
    MetricGroup::kGradReduced, MetricGroup::kExpAvg,       MetricGroup::kExpAvgSq,
    MetricGroup::kParamOrigin, MetricGroup::kParamUpdated, MetricGroup::kOther};

}  // namespace

TensorSummary nan_summary() {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  TensorSummary s;
  s.min = s.max = s.mean = s.norm = s.zeros = s.nans = s.infs = kNaN;
  return s;
}

TensorSummary stats_summary(const TensorStats& st, double zeros) {
  TensorSummary s;
  s.min = st.min;
  s.max = st.max;
  s.mean = st.mean();
  s.norm = st.norm();
  s.nans = static_cast<double>(st.nan_count);
  s.infs = static_cast<double>(st.pos_inf_count + st.neg_inf_count);
  s.zeros = zeros;
  return s;
}

TensorSummary scalar_summary(double value, double eps) {
  TensorSummary s;
  s.min = s.max = s.mean = value;
  s.norm = std::fabs(value);
  s.zeros = std::fabs(value) < eps ? 1.0 : 0.0;
  s.nans = std::isnan(value) ? 1 : 0;
  s.infs = std::isinf(value) ? 1 : 0;
  return s;
}

std::vector<AnomalyEvent> write_step_rows(
    MetricSink& sink, int64_t step, const std::vector<std::pair<MetricGroup, MetricRow>>& rows) {
  for (MetricGroup g : kWriteOrder) {
    std::vector<MetricRow> of_group;
    for (const auto& [group, row] : rows)
      if (group == g) of_group.push_back(row);
    if (!of_group.empty()) sink.write(g, step, of_group);
  }
  return sink.end_step(step);
}

}  // namespace numprobe::monitor
