// The checks in order, and what they share (config_compare.h).
#include "config_check/config_compare.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "numprobe/error.h"

namespace numprobe::configcheck {

std::string python_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string s(buf, r.ptr);  // [-]d[.ddd]e±XX, the shortest digits that round-trip
  const size_t e = s.find('e');
  const int exp = std::atoi(s.c_str() + e + 1);
  std::string sign = s[0] == '-' ? "-" : "";
  std::string digits;
  for (size_t i = sign.size(); i < e; ++i)
    if (s[i] != '.') digits += s[i];
  if (exp < -4 || exp >= 16) {
    std::string m = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
    std::string x = std::to_string(std::abs(exp));
    if (x.size() < 2) x = "0" + x;
    return sign + m + "e" + (exp < 0 ? "-" : "+") + x;
  }
  if (exp < 0) return sign + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  const size_t point = static_cast<size_t>(exp) + 1;
  if (digits.size() <= point) return sign + digits + std::string(point - digits.size(), '0') + ".0";
  return sign + digits.substr(0, point) + "." + digits.substr(point);
}

Json parse_member_json(const std::string& text, const std::string& file,
                       const std::string& member) {
  base::JsonReadOptions options;
  options.max_depth = 128;
  try {
    return base::parse_json(text, file + ": member " + member, options);
  } catch (const InputError& e) {
    throw InputError(file,
                     std::string("member ") + member + " is not valid JSON (" + e.what() + ")");
  }
}

Cell Cell::num(double v) {
  return {kNumber, python_float(v), v};
}

std::string level_status_of(const std::vector<Row>& rows, size_t column) {
  std::string status = "pass";
  for (const Row& r : rows) {
    if (r[column].text == "error") return "error";
    if (r[column].text == "warning") status = "warning";
  }
  return status;
}

std::string flag_status_of(const std::vector<Row>& rows, size_t column) {
  for (const Row& r : rows)
    if (!(r[column].kind == Cell::kBool && r[column].text == "True")) return "error";
  return "pass";
}

std::vector<CheckTable> compare_packs(const Pack& golden, const Pack& target,
                                      const std::string& framework) {
  struct Check {
    const char* name;
    const char* member;
    CheckTable (*run)(const Pack&, const Pack&, const std::string&);
  };
  static const Check kChecks[] = {
      {"env", "env",
       [](const Pack& b, const Pack& c, const std::string&) { return compare_env(b, c); }},
      {"pip", "pip", compare_pip},
      {"hyperparameters", "hyperparameters",
       [](const Pack& b, const Pack& c, const std::string&) {
         return compare_hyperparameters(b, c);
       }},
      {"weights", "weights",
       [](const Pack& b, const Pack& c, const std::string&) { return compare_weights(b, c); }},
      {"dataset", "dataset",
       [](const Pack& b, const Pack& c, const std::string&) { return compare_dataset(b, c); }},
      {"random", "random",
       [](const Pack& b, const Pack& c, const std::string&) { return compare_random(b, c); }},
  };
  std::vector<CheckTable> out;
  for (const Check& check : kChecks) {
    const bool in_golden = golden.has(check.member) || golden.has_under(check.member);
    const bool in_target = target.has(check.member) || target.has_under(check.member);
    if (in_golden && in_target) {
      out.push_back(check.run(golden, target, framework));
      continue;
    }
    CheckTable skipped;
    skipped.name = check.name;
    skipped.status = "skipped";
    skipped.note = std::string(check.member) + " in " +
                   (!in_golden && !in_target
                        ? "neither pack"
                        : std::string("only the ") + (in_golden ? "golden" : "target") + " pack");
    out.push_back(std::move(skipped));
  }
  return out;
}

}  // namespace numprobe::configcheck
