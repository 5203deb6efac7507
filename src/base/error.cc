#include "numprobe/error.h"

namespace numprobe {
namespace {
std::string format_message(const std::string& file, const std::string& what, int64_t offset) {
  std::string msg = file.empty() ? std::string("<input>") : file;
  if (offset >= 0) msg += " (byte " + std::to_string(offset) + ")";
  msg += ": ";
  msg += what;
  return msg;
}
}  // namespace

InputError::InputError(std::string file, const std::string& what, int64_t offset)
    : Error(format_message(file, what, offset)), file_(std::move(file)), offset_(offset) {}

}  // namespace numprobe
