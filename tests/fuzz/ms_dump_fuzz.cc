// libFuzzer target for what `numprobe convert` reads of a MindSpore kernel dump as text: the graph
// IR (ms_graph_ir) and, line by line, the tensor file names (ms_kernel_name). Any crash,
// sanitizer report or broken invariant is a bug.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "convert/ms_graph_ir.h"
#include "convert/ms_kernel_name.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  numprobe::convert::IrGraph g = numprobe::convert::parse_ms_graph_ir(text);
  // Every name in the order has its shapes, once.
  if (g.order.size() != g.shapes.size()) __builtin_trap();
  for (const auto& n : g.order)
    if (!g.shapes.count(n)) __builtin_trap();
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    auto f = numprobe::convert::parse_ms_kernel_file(line);
    if (f && (f->op_type.empty() || f->scope.empty() || f->index < 0)) __builtin_trap();
  }
  return 0;
}
