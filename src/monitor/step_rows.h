// What every monitor collector (the torch one in src/torch/monitor, the buffer one of the
// torch-free binding in python/engine_src) does with a step's rows once summarised: the summaries
// that come without a tensor, and the rows handed to the sink group by group in msprobe's order.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/stats.h"
#include "numprobe/monitor/sink.h"

namespace numprobe::monitor {

// Every op NaN: msprobe's row for a missing or empty tensor.
TensorSummary nan_summary();
// The ops of a tensor from the engine's statistics; zeros is its share of |x| < eps (NaN when
// the config's ops do not ask for it).
TensorSummary stats_summary(const TensorStats& stats, double zeros);
// A row holding one scalar (mg_direction): min = max = mean = value, norm = |value|.
TensorSummary scalar_summary(double value, double eps);
// Writes rows (in call order) to sink as msprobe's step_final_hook does: one write per group,
// groups in msprobe's order, each keeping its rows' call order. Then ends the step and returns
// the anomalies found.
std::vector<AnomalyEvent> write_step_rows(
    MetricSink& sink, int64_t step, const std::vector<std::pair<MetricGroup, MetricRow>>& rows);

}  // namespace numprobe::monitor
