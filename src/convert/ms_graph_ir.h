// The shapes MindSpore's graph IR (rank_<N>/graphs/ms_output_trace_code_graph_<g>.ir) gives each
// kernel. MindSpore's CPU dump writes some tensors with the shape of the buffer they share: a
// Reshape is a no-op there, and its output (and what consumes it) is dumped with the input's
// shape, (2, 5, 8) for a (10, 8) tensor. The IR holds the shape the graph computes with, in each
// node's abstract line:
//   %0(x) = PrimFunc_Reshape(%para37_args0, (I64(-1), I64(8))) ...
//       : (<Tensor[Float32], (2, 5, 8)>, <Tuple[Int64*2], ...>) -> (<Tensor[Float32], (10, 8)>)
//       ...
//       # Fullname with scope: (Default/Reshape-op0)
// Tuple outputs are listed as TupleShape((2, 5, 16), (2, 5, 1), ...). Only what parses cleanly is
// kept; the converter uses a shape only where the element count agrees with the dumped file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace numprobe::convert {

using IrShape = std::optional<std::vector<int64_t>>;  // nullopt: not a tensor, or unparsed

struct IrKernelShapes {
  std::vector<IrShape> inputs;
  std::vector<IrShape> outputs;
};

struct IrGraph {
  // Full names ("Default/Reshape-op0") in the order the IR lists the nodes: a topological order
  // that follows the source, where the execution order file may run independent branches (a
  // block's q, k and v projections) the other way round.
  std::vector<std::string> order;
  std::unordered_map<std::string, IrKernelShapes> shapes;
};

// Never throws; text that does not follow the layout above gives no entry.
IrGraph parse_ms_graph_ir(std::string_view text);

}  // namespace numprobe::convert
