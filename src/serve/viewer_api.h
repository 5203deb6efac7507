// The viewer's JSON endpoints (docs/graph.md "The viewer's HTTP API") over one VisDbReader, with
// no HTTP in sight: a path and its query parameters in, a status and a JSON body out. Every bad
// parameter is a 4xx with {"error": ...}; a damaged file is a 500 with the reader's message.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "graph/vis_db_reader.h"
#include "serve/findings.h"

namespace numprobe::serve {

struct ApiResponse {
  int status = 200;
  std::string body;  // JSON
};

using Params = std::map<std::string, std::string>;

class ViewerApi {
 public:
  explicit ViewerApi(graph::VisDbReader& reader);
  // path: "/api/meta", "/api/children", ...; anything else is a 404.
  ApiResponse get(const std::string& path, const Params& params);

 private:
  ApiResponse meta();
  ApiResponse children(const Params& p);
  ApiResponse node(const Params& p);
  ApiResponse search(const Params& p);
  ApiResponse filter(const Params& p);

  graph::VisDbReader& reader_;  // one connection: calls are serialized by mu_
  std::mutex mu_;
  Findings findings_;
};

}  // namespace numprobe::serve
