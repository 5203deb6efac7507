// The viewer's files (web/: index.html, app.js, app.css), embedded at build time by
// cmake/web_assets.cmake into a generated source; the server serves these and nothing else.
#pragma once

#include <cstddef>
#include <string_view>

namespace numprobe::serve {

struct WebAsset {
  const char* path;  // "/index.html", "/app.js", "/app.css"
  const char* content_type;
  const unsigned char* data;
  size_t size;
};

// Defined in the generated web_assets.cc.
extern const WebAsset kWebAssets[];
extern const size_t kWebAssetCount;

// The asset for a request path ("/" is index.html); nullptr for anything else.
const WebAsset* find_web_asset(std::string_view path);

}  // namespace numprobe::serve
