// `numprobe serve`'s HTTP server: the embedded UI and the JSON API (viewer_api.h) on cpp-httplib,
// until SIGINT or SIGTERM.
#pragma once

#include <string>

#include "graph/vis_db_reader.h"

namespace numprobe::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  int threads = 4;
};

// Binds, prints "numprobe serve: http://HOST:PORT/ (file)" to stdout, and serves until SIGINT or
// SIGTERM; returns the exit code. Throws numprobe::Error when the address cannot be bound.
int run_server(graph::VisDbReader& reader, const ServeOptions& options);

}  // namespace numprobe::serve
