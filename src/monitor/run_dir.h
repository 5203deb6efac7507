// msprobe's run directory: <base>/<%b%d_%H-%M-%S>-rank<r>-<uid8>, the time taken in Asia/Shanghai
// (UTC+8, as module_hook.py does), the uid the first 8 hex digits of a random UUID.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

namespace numprobe::monitor {

// "Mar05_14-03-22" for t (seconds since the epoch) in UTC+8, C-locale month names.
std::string run_time_tag(time_t t);
// Whether name looks like a run directory (msprobe's r"([\w-]{0,20})-rank(\d{1,5})-"), and its
// time tag and rank.
bool parse_run_dir_name(const std::string& name, std::string* time_tag, int64_t* rank);
// Makes and returns the run directory of rank under base. append_output ([start, end] time tags)
// picks the existing run directory of this rank whose time tag lies in [start, end] instead (the
// latest such); none is an Error.
std::string make_run_dir(const std::string& base, int64_t rank,
                         const std::vector<std::string>& append_output);

}  // namespace numprobe::monitor
