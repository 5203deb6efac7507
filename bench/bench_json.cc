// JSON benchmark: writes a large synthetic dump through the journal writer, then reads it with
// numprobe's reader (throughput, peak RSS, model size) and, as a reference, with simdjson's DOM
// parser on the same file. Usage: bench_json [--entries N] [--dir D]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench_util.h"
#include "dump_generator.h"
#include "numprobe/dump.h"

#ifdef NUMPROBE_HAVE_SIMDJSON
#include <simdjson.h>
#endif

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Result {
  double seconds;
  long hwm_kib;
  long model_bytes;
  long entries;
};

// Runs fn in a child process so that its peak RSS is its own.
template <typename F>
Result in_child(F&& fn) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Result r = fn();
    r.hwm_kib = numprobe::bench::rss_hwm_kib();
    if (write(fds[1], &r, sizeof r) != sizeof r) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  Result r{};
  if (read(fds[0], &r, sizeof r) != sizeof r) r.seconds = -1;
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  size_t entries = 400000;
  std::string dir = "/tmp/numprobe-bench-json";
  for (int i = 1; i + 1 < argc; ++i) {
    if (!strcmp(argv[i], "--entries"))
      entries = std::stoul(argv[++i]);
    else if (!strcmp(argv[i], "--dir"))
      dir = argv[++i];
  }
  std::filesystem::remove_all(dir);
  double t0 = now();
  auto g = numprobe::bench::generate_statistics_dump(dir, entries);
  double write_s = now() - t0;
  std::string path = dir + "/dump.json";
  double mb = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  printf("generated %zu entries, %zu tensors: dump.json %.1f MB\n", g.entries, g.tensors, mb);
  printf("write (journal + assembly, fsync): %.2f s = %.0f MB/s\n", write_s, mb / write_s);

  long base = in_child([] { return Result{0, 0, 0, 0}; }).hwm_kib;
  for (int rep = 0; rep < 2; ++rep) {
    Result r = in_child([&] {
      double s = now();
      numprobe::DumpFile d = numprobe::read_dump_json(path);
      double e = now() - s;
      return Result{e, 0, static_cast<long>(d.memory_bytes()), static_cast<long>(d.entries.size())};
    });
    printf(
        "numprobe read_dump_json: %.3f s = %.0f MB/s; %ld entries; model %.1f MB (%.2fx of "
        "text); peak RSS %.1f MB (%.2fx of text, process baseline %.1f MB)\n",
        r.seconds, mb / r.seconds, r.entries, r.model_bytes / 1e6, r.model_bytes / 1e6 / mb,
        r.hwm_kib / 1024.0, r.hwm_kib / 1024.0 * 1.048576 / mb, base / 1024.0);
  }
#ifdef NUMPROBE_HAVE_SIMDJSON
  for (int rep = 0; rep < 2; ++rep) {
    Result r = in_child([&] {
      simdjson::dom::parser parser;
      double s = now();
      simdjson::dom::element doc;
      auto err = parser.load(path).get(doc);
      long n = 0;
      if (!err) {
        simdjson::dom::object data;
        if (!doc["data"].get(data)) n = static_cast<long>(data.size());
      }
      double e = now() - s;
      return Result{e, 0, 0, err ? -1 : n};
    });
    printf(
        "simdjson DOM parse (reference, same file incl. load): %.3f s = %.0f MB/s; peak RSS "
        "%.1f MB\n",
        r.seconds, mb / r.seconds, r.hwm_kib / 1024.0);
  }
#else
  printf("simdjson not found at build time: no reference number\n");
#endif
  std::filesystem::remove_all(dir);
  return 0;
}
