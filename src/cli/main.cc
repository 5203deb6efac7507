// numprobe: one binary, one small class per subcommand (see subcommand.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>

#include "cli/subcommand.h"
#include "numprobe/error.h"

namespace {

// CLI11 takes single-dash names of one letter only; msprobe spells some flags "-dm". Those names
// are dropped from the CLI11 spelling and rewritten to the long name before parsing.
std::map<std::string, std::string> g_aliases;
// Work that needs the parse results (optional values).
std::vector<std::function<void()>> g_after_parse;

std::string take_aliases(const std::string& names) {
  std::vector<std::string> keep, aliases;
  std::string first_long;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    std::string n =
        names.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (n.size() > 2 && n[0] == '-' && n[1] != '-') {
      aliases.push_back(n);
    } else {
      if (first_long.empty() && n.rfind("--", 0) == 0) first_long = n;
      keep.push_back(n);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const auto& a : aliases) g_aliases[a] = first_long;
  std::string out;
  for (const auto& k : keep) out += (out.empty() ? "" : ",") + k;
  return out;
}

void add_flag(CLI::App& app, const numprobe::cli::Flag& f) {
  using numprobe::cli::Flag;
  CLI::Option* o = nullptr;
  const std::string names = take_aliases(f.names);
  switch (f.kind) {
    case Flag::kBool:
      o = app.add_flag(names, *static_cast<bool*>(f.target), f.help);
      break;
    case Flag::kString:
      o = app.add_option(names, *static_cast<std::string*>(f.target), f.help);
      break;
    case Flag::kInt:
      o = app.add_option(names, *static_cast<int64_t*>(f.target), f.help);
      break;
    case Flag::kStrings:
      o = app.add_option(names, *static_cast<std::vector<std::string>*>(f.target), f.help);
      break;
    case Flag::kOptionalString: {
      o = app.add_option(names, f.help)->expected(0, 1);
      auto* target = static_cast<std::optional<std::string>*>(f.target);
      g_after_parse.push_back([o, target] {
        if (o->count() == 0) return;
        const auto& r = o->results();
        *target = r.empty() ? std::string() : r.front();
      });
      break;
    }
  }
  if (f.required) o->required();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && numprobe::cli::is_python_front(argc, argv))
    return numprobe::cli::run_python_front(argc, argv);
  CLI::App app{
      "numprobe: find the first op where two training runs diverge.\n"
      "Reads and writes msprobe dumps (dump.json / stack.json / construct.json)."};
  app.require_subcommand(1);
  app.footer(
      "Also: acc-check / multi-acc-check (msprobe's flags: -api_info dump.json -o out ...), "
      "replaying a dump's APIs against a float64 CPU reference; see docs/acc_check.md.\n"
      "      config-check -d run.sh cfg.yaml -o pack.zip (Python) packs a training's setup for "
      "config-check -c; see docs/config_check.md.\n"
      "      locate --golden CMD --target CMD -o out (Python) runs both trainings round by round "
      "(modules, APIs, tensors, acc-check) to the op where they part; see docs/locate.md.");
  app.set_version_flag("--version", "numprobe 0.1.0");

  std::vector<std::unique_ptr<numprobe::cli::Subcommand>> commands;
  commands.push_back(numprobe::cli::make_info_command());
  commands.push_back(numprobe::cli::make_stats_command());
  commands.push_back(numprobe::cli::make_recover_command());
  commands.push_back(numprobe::cli::make_rewrite_command());
  commands.push_back(numprobe::cli::make_compare_command());
  commands.push_back(numprobe::cli::make_merge_command());
  commands.push_back(numprobe::cli::make_graph_command());
  commands.push_back(numprobe::cli::make_serve_command());
  commands.push_back(numprobe::cli::make_ckpt_compare_command());
  commands.push_back(numprobe::cli::make_config_check_command());
  commands.push_back(numprobe::cli::make_monitor_analyse_command());
  commands.push_back(numprobe::cli::make_monitor_report_command());
  commands.push_back(numprobe::cli::make_grad_compare_command());
  commands.push_back(numprobe::cli::make_convert_command());

  std::vector<std::pair<CLI::App*, numprobe::cli::Subcommand*>> apps;
  for (auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c->name(), c->summary());
    for (const auto& f : c->flags()) add_flag(*sub, f);
    apps.emplace_back(sub, c.get());
  }

  app.name(std::filesystem::path(argv[0]).filename().string());
  std::vector<std::string> args;
  for (int i = argc - 1; i > 0; --i) {  // CLI11 parses a reversed vector
    std::string a = argv[i];
    auto it = g_aliases.find(a.substr(0, a.find('=')));
    if (it != g_aliases.end()) a = it->second + a.substr(it->first.size());
    args.push_back(a);
  }
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& f : g_after_parse) f();
  for (auto& [sub, cmd] : apps) {
    if (!sub->parsed()) continue;
    try {
      return cmd->run();
    } catch (const numprobe::Error& e) {
      fprintf(stderr, "numprobe %s: error: %s\n", cmd->name(), e.what());
      return 1;
    } catch (const std::filesystem::filesystem_error& e) {
      fprintf(stderr, "numprobe %s: error: %s\n", cmd->name(), e.what());
      return 1;
    } catch (const std::exception& e) {
      fprintf(stderr, "numprobe %s: internal error: %s\n", cmd->name(), e.what());
      return 3;
    }
  }
  return 2;
}
