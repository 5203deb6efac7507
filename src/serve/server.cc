#include "serve/server.h"

#include <httplib.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "numprobe/error.h"
#include "serve/viewer_api.h"
#include "serve/web_assets.h"

namespace numprobe::serve {

const WebAsset* find_web_asset(std::string_view path) {
  if (path == "/") path = "/index.html";
  for (size_t i = 0; i < kWebAssetCount; ++i) {
    if (path == kWebAssets[i].path) return &kWebAssets[i];
  }
  return nullptr;
}

namespace {

constexpr const char* kJson = "application/json; charset=utf-8";

void set_json(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, kJson);
}

std::string file_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

int run_server(graph::VisDbReader& reader, const ServeOptions& options) {
  // SIGINT/SIGTERM are taken by sigwait on this thread: blocked before any thread starts, so the
  // server's threads never see them, and the server is stopped from ordinary code.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  ViewerApi api(reader);
  httplib::Server svr;
  const int threads = options.threads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_default_headers({
      {"Content-Security-Policy",
       "default-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"Cache-Control", "no-store"},
  });
  svr.set_payload_max_length(1 << 16);
  svr.Get("/api/.*", [&api](const httplib::Request& req, httplib::Response& res) {
    Params params;
    for (const auto& [k, v] : req.params) params.emplace(k, v);  // the first of a repeated name
    const ApiResponse r = api.get(req.path, params);
    set_json(res, r.status, r.body);
  });
  // Everything else is an embedded asset or a 404: no request path reaches the file system.
  svr.Get(".*", [](const httplib::Request& req, httplib::Response& res) {
    const WebAsset* a = find_web_asset(req.path);
    if (!a) {
      set_json(res, 404, "{\"error\":\"not found\"}");
      return;
    }
    res.set_content(reinterpret_cast<const char*>(a->data), a->size, a->content_type);
  });
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        set_json(res, 500, "{\"error\":\"internal error\"}");
      });

  const int port = options.port == 0
                       ? svr.bind_to_any_port(options.host)
                       : (svr.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port < 0) {
    throw Error("cannot listen on " + options.host + ":" + std::to_string(options.port) +
                " (in use? try --port 0)");
  }
  const std::string host =
      options.host.find(':') != std::string::npos ? "[" + options.host + "]" : options.host;
  printf("numprobe serve: http://%s:%d/ (%s)\n", host.c_str(), port,
         file_name(reader.path()).c_str());
  fflush(stdout);

  std::thread listener([&svr] {
    svr.listen_after_bind();
    // Ended on its own (a socket error): wake the signal wait below.
    kill(getpid(), SIGTERM);
  });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  svr.stop();
  listener.join();
  fprintf(stderr, "numprobe serve: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  return 0;
}

}  // namespace numprobe::serve
