// Small filesystem helpers with error messages that name the file.
#pragma once

#include <string>
#include <string_view>

namespace numprobe::format {

// Writes `bytes` to path.tmp, fsyncs, renames over `path`. Throws Error naming the file.
void write_file_atomic(const std::string& path, std::string_view bytes);
bool file_exists(const std::string& path);

}  // namespace numprobe::format
