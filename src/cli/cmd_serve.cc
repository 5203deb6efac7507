// numprobe serve <dir | file.vis.db> [--port N] [--host H]: the graph viewer (docs/graph.md).
#include <cstdio>
#include <filesystem>

#include "cli/subcommand.h"
#include "graph/vis_db_reader.h"
#include "numprobe/error.h"
#include "serve/server.h"

namespace numprobe::cli {
namespace {

namespace fs = std::filesystem;

bool is_vis_db(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 7 && name.compare(name.size() - 7, 7, ".vis.db") == 0;
}

// A directory's newest *.vis.db (what `numprobe graph -o dir` wrote last).
std::string newest_vis_db(const std::string& dir) {
  fs::path best;
  fs::file_time_type best_time;
  size_t count = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file() || !is_vis_db(e.path())) continue;
    ++count;
    const auto t = e.last_write_time();
    if (best.empty() || t > best_time || (t == best_time && e.path() > best)) {
      best = e.path();
      best_time = t;
    }
  }
  if (best.empty()) throw InputError(dir, "no *.vis.db file in this directory");
  fprintf(stderr, "numprobe serve: %zu .vis.db file%s in %s, serving the newest: %s\n", count,
          count == 1 ? "" : "s", dir.c_str(), best.filename().string().c_str());
  return best.string();
}

class ServeCommand : public Subcommand {
 public:
  const char* name() const override { return "serve"; }
  const char* summary() const override {
    return "Serve a graph file (.vis.db) in the browser: two hierarchies, colours, findings";
  }
  std::vector<Flag> flags() override {
    return {
        {"path", "a .vis.db file, or a directory (its newest .vis.db)", Flag::kString, &path_,
         true},
        {"--port", "TCP port (default 8080; 0 picks a free one)", Flag::kInt, &port_},
        {"--host", "address to listen on (default 127.0.0.1; anything else is reachable by others)",
         Flag::kString, &host_},
    };
  }
  int run() override {
    if (port_ < 0 || port_ > 65535) throw Error("--port must be 0..65535");
    const std::string file = fs::is_directory(path_) ? newest_vis_db(path_) : path_;
    if (!fs::exists(file)) throw InputError(file, "no such file");
    graph::VisDbReader reader(file);
    serve::ServeOptions opt;
    opt.port = static_cast<int>(port_);
    if (!host_.empty()) {
      opt.host = host_;
      if (host_ != "127.0.0.1" && host_ != "localhost" && host_ != "::1") {
        fprintf(stderr,
                "numprobe serve: warning: listening on %s: anyone who can reach it can read "
                "this graph (no authentication)\n",
                host_.c_str());
      }
    }
    return serve::run_server(reader, opt);
  }

 private:
  std::string path_, host_;
  int64_t port_ = 8080;
};

}  // namespace

std::unique_ptr<Subcommand> make_serve_command() {
  return std::make_unique<ServeCommand>();
}

}  // namespace numprobe::cli
