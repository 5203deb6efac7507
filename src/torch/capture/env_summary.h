// numprobe_env.json: the environment a dump was made in, written beside dump.json in every rank
// directory (numprobe locate's preflight compares the two runs' files; docs/locate.md).
#pragma once

#include <string>

namespace numprobe::capture {

inline constexpr const char* kEnvSummaryFile = "numprobe_env.json";

// The summary as JSON text: torch version, device, BLAS, thread counts, deterministic and TF32
// flags, the default generator's seed and the environment variables that change a computation.
// `runtime` names the front ("python" or "c++"); `extra` is a JSON object's members to append
// (without braces, "" for none), from the front that knows them (Python's version and seeds).
// Written by the capture session's writer thread (CaptureSession::write_side_file), unless the file
// exists.
std::string environment_summary_json(const std::string& runtime, const std::string& extra);

}  // namespace numprobe::capture
