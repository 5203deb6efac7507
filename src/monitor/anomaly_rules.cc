#include "monitor/anomaly_rules.h"

#include <cmath>

#include "monitor/py_text.h"

namespace numprobe::monitor {

std::optional<RuleHit> AnomalyDetector::check(const std::string& tag_name, const std::string& op,
                                              double value) {
  if (rules_.empty()) return std::nullopt;
  const double a = std::fabs(value);
  const auto [it, fresh] = avg_.emplace(tag_name + '\0' + op, a);
  const double history = it->second;
  it->second = 0.99 * history + (1 - 0.99) * a;
  (void)fresh;
  for (const AlertRule& r : rules_) {
    bool hit;
    if (r.name == "AnomalyTurbulence") {
      hit = a > history * (1 + r.threshold);
    } else {
      hit = std::isnan(value) || a > r.threshold;
    }
    if (!hit) continue;
    if (r.name == "AnomalyTurbulence" && op != "norm" && op != "mean") return std::nullopt;
    return RuleHit{r.name, history};
  }
  return std::nullopt;
}

std::string anomaly_message(const RuleHit& hit, const std::string& tag_name, const std::string& op,
                            int64_t step, double value) {
  return "Rule " + hit.rule + " reports anomaly signal in (" + py_str_repr(tag_name) + ", " +
         py_str_repr(op) + ") at step " + std::to_string(step) + ", current value " +
         py_float_str(value) + ", history mean " + py_float_str(hit.history) + ".";
}

}  // namespace numprobe::monitor
