// numprobe config-check -c golden.zip target.zip -o out/: the compare of two config_check packs
// (docs/config_check.md). Packs are made in Python (`-d`, ConfigChecker), see python_front.cc.
// Exit status: 0 every check passed (warnings allowed), 1 a check failed, 2 bad input.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/subcommand.h"
#include "config_check/config_compare.h"
#include "numprobe/error.h"

namespace numprobe::cli {
namespace {

int order(const std::string& status) {
  return status == "error" ? 0 : status == "warning" ? 1 : status == "skipped" ? 2 : 3;
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return s;
}

void print_results(std::vector<configcheck::CheckTable> tables, const std::string& xlsx) {
  std::stable_sort(tables.begin(), tables.end(),
                   [](const auto& a, const auto& b) { return order(a.status) < order(b.status); });
  for (const auto& t : tables) {
    const std::string detail = t.status == "skipped"
                                   ? " (" + t.note + ")"
                                   : " (" + std::to_string(t.rows.size()) + " rows)";
    printf("%-8s %s%s\n", upper(t.status).c_str(), t.name.c_str(), detail.c_str());
    if (t.status != "error") continue;
    int shown = 0;
    for (const auto& row : t.rows) {
      if (shown == 5) break;
      const bool fails = std::any_of(row.begin(), row.end(), [](const configcheck::Cell& c) {
        return c.text == "error" || c.is_false();
      });
      if (!fails) continue;
      ++shown;
      std::string line;
      for (const auto& c : row) {
        if (c.text.empty()) continue;
        line += (line.empty() ? "" : " | ") + c.text.substr(c.text.rfind('\n') + 1);
      }
      printf("         %s\n", line.c_str());
    }
  }
  printf("result: %s\n", xlsx.c_str());
}

class ConfigCheckCommand : public Subcommand {
 public:
  const char* name() const override { return "config-check"; }
  const char* summary() const override {
    return "Compare two config_check packs (-c golden.zip target.zip -o out/): environment, "
           "packages, hyper-parameters, weights, data, random calls; -d packs (Python)";
  }
  std::vector<Flag> flags() override {
    return {{"-c,--compare", "golden and target packs", Flag::kStrings, &packs_, true},
            {"-o,--output", "result folder (default ./config_check_result)", Flag::kString, &out_},
            {"-f,--framework,--fmk", "pytorch", Flag::kString, &framework_}};
  }
  int run() override {
    std::vector<configcheck::CheckTable> tables;
    std::string xlsx;
    try {
      if (packs_.size() != 2) throw Error("-c takes exactly two packs (golden, target)");
      if (framework_ != "pytorch") throw Error("framework " + framework_ + ": only pytorch");
      const configcheck::Pack golden(packs_[0]), target(packs_[1]);
      tables = configcheck::compare_packs(golden, target, framework_);
      xlsx = configcheck::write_config_report(tables, out_);
    } catch (const Error& e) {
      fprintf(stderr, "numprobe config-check: error: %s\n", e.what());
      return 2;
    }
    print_results(tables, xlsx);
    return std::any_of(tables.begin(), tables.end(),
                       [](const auto& t) { return t.status == "error"; })
               ? 1
               : 0;
  }

 private:
  std::vector<std::string> packs_;
  std::string out_ = "./config_check_result";
  std::string framework_ = "pytorch";
};

}  // namespace

std::unique_ptr<Subcommand> make_config_check_command() {
  return std::make_unique<ConfigCheckCommand>();
}

}  // namespace numprobe::cli
