// msprobe's anomaly rules (core/monitor/anomaly_processor.py, data_writers.py BaseWriterWithAD):
// an exponential moving average of |x| per (tag, op), and the configured rules applied in order.
//
// Invariants (msprobe's, kept on purpose):
//  - The first value of a (tag, op) sets avg = |x|; each check returns the average before the value
//    and then folds it in: avg <- 0.99 * avg + 0.01 * |x|.
//  - AnomalyTurbulence trips on |x| > avg_prev * (1 + threshold) (upward only); AnomalyNan on
//    isnan(x) or |x| > threshold.
//  - The first rule that trips decides: a Turbulence hit on an op other than norm or mean is
//    dropped, even where a later rule (AnomalyNan) would have tripped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "numprobe/monitor/config.h"

namespace numprobe::monitor {

struct RuleHit {
  std::string rule;
  double history = 0;  // the average before this value
};

class AnomalyDetector {
 public:
  explicit AnomalyDetector(std::vector<AlertRule> rules) : rules_(std::move(rules)) {}
  bool enabled() const { return !rules_.empty(); }
  // Updates the average of (tag_name, op) with value; the hit to report, if any.
  std::optional<RuleHit> check(const std::string& tag_name, const std::string& op, double value);

 private:
  std::vector<AlertRule> rules_;
  std::unordered_map<std::string, double> avg_;  // key: tag_name '\0' op
};

// msprobe's message: "Rule <rule> reports anomaly signal in ('<tag>', '<op>') at step <step>,
// current value <x>, history mean <avg>."
std::string anomaly_message(const RuleHit& hit, const std::string& tag_name, const std::string& op,
                            int64_t step, double value);

}  // namespace numprobe::monitor
