// numprobe: one binary, one small class per subcommand (see subcommand.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/subcommand.h"
#include "numprobe/error.h"

namespace {

void add_flag(CLI::App& app, const numprobe::cli::Flag& f) {
  using numprobe::cli::Flag;
  CLI::Option* o = nullptr;
  switch (f.kind) {
    case Flag::kBool:
      o = app.add_flag(f.names, *static_cast<bool*>(f.target), f.help);
      break;
    case Flag::kString:
      o = app.add_option(f.names, *static_cast<std::string*>(f.target), f.help);
      break;
    case Flag::kInt:
      o = app.add_option(f.names, *static_cast<int64_t*>(f.target), f.help);
      break;
    case Flag::kStrings:
      o = app.add_option(f.names, *static_cast<std::vector<std::string>*>(f.target), f.help);
      break;
  }
  if (f.required) o->required();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && numprobe::cli::is_python_front(argv[1]))
    return numprobe::cli::run_python_front(argc, argv);
  CLI::App app{
      "numprobe: find the first op where two training runs diverge.\n"
      "Reads and writes msprobe dumps (dump.json / stack.json / construct.json)."};
  app.require_subcommand(1);
  app.footer(
      "Also: acc-check / multi-acc-check (msprobe's flags: -api_info dump.json -o out ...), "
      "replaying a dump's APIs against a float64 CPU reference; see docs/acc_check.md.");
  app.set_version_flag("--version", "numprobe 0.1.0");

  std::vector<std::unique_ptr<numprobe::cli::Subcommand>> commands;
  commands.push_back(numprobe::cli::make_info_command());
  commands.push_back(numprobe::cli::make_stats_command());
  commands.push_back(numprobe::cli::make_recover_command());
  commands.push_back(numprobe::cli::make_rewrite_command());
  commands.push_back(numprobe::cli::make_compare_command());

  std::vector<std::pair<CLI::App*, numprobe::cli::Subcommand*>> apps;
  for (auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c->name(), c->summary());
    for (const auto& f : c->flags()) add_flag(*sub, f);
    apps.emplace_back(sub, c.get());
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
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
