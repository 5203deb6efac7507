// The monitor report's scripts and styles, embedded at build time (cmake/report_embed.cmake).
#pragma once

#include "numprobe/monitor/report.h"

namespace numprobe::cli {

monitor::ReportAssets report_assets();

}  // namespace numprobe::cli
