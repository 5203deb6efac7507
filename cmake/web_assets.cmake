# The viewer's web UI (web/): TypeScript bundled by esbuild, then embedded into the numprobe binary
# as byte arrays (a generated web_assets.cc), so the installed binary needs no npm and no files.
#
#   web/package-lock.json -> npm ci into web/node_modules (shared by every build dir: a lock and
#                            a stamp holding the lock file's hash; see web_npm_ci.cmake)
#   web/src/*.ts          -> tsc --noEmit (type check), esbuild -> <build>/web/app.js
#   index.html, app.css, app.js -> <build>/web/web_assets.cc (web_embed.cmake)
#   uPlot (npm) + web/report/*   -> <build>/web/report_assets.cc (report_embed.cmake): the
#                                   self-contained page of `numprobe monitor-report`
find_program(NUMPROBE_NPM npm REQUIRED)
find_program(NUMPROBE_NODE node REQUIRED)
set(_web_dir ${CMAKE_SOURCE_DIR}/web)
set(_web_out ${CMAKE_BINARY_DIR}/web)
file(GLOB _web_ts CONFIGURE_DEPENDS ${_web_dir}/src/*.ts)
file(MAKE_DIRECTORY ${_web_out})

add_custom_command(
  OUTPUT ${_web_out}/npm-ci.stamp
  COMMAND ${CMAKE_COMMAND} -DWEB_DIR=${_web_dir} -DNPM=${NUMPROBE_NPM}
          -DSTAMP=${_web_out}/npm-ci.stamp -P ${CMAKE_SOURCE_DIR}/cmake/web_npm_ci.cmake
  DEPENDS ${_web_dir}/package-lock.json ${_web_dir}/package.json
          ${CMAKE_SOURCE_DIR}/cmake/web_npm_ci.cmake
  COMMENT "web: npm ci (when web/package-lock.json changed)"
  VERBATIM)

add_custom_command(
  OUTPUT ${_web_out}/app.js
  COMMAND ${NUMPROBE_NODE} ${_web_dir}/node_modules/typescript/bin/tsc --noEmit -p ${_web_dir}
  # .bin/esbuild: a node launcher or, once its install script ran, the native binary.
  COMMAND ${_web_dir}/node_modules/.bin/esbuild ${_web_dir}/src/main.ts
          --bundle --minify --target=es2020 --log-level=warning --outfile=${_web_out}/app.js
  DEPENDS ${_web_ts} ${_web_dir}/tsconfig.json ${_web_out}/npm-ci.stamp
  WORKING_DIRECTORY ${_web_dir}
  COMMENT "web: type check and bundle web/src/*.ts"
  VERBATIM)

add_custom_command(
  OUTPUT ${_web_out}/web_assets.cc
  COMMAND ${CMAKE_COMMAND} -DOUT=${_web_out}/web_assets.cc -DINDEX_HTML=${_web_dir}/src/index.html
          -DAPP_JS=${_web_out}/app.js -DAPP_CSS=${_web_dir}/src/app.css
          -P ${CMAKE_SOURCE_DIR}/cmake/web_embed.cmake
  DEPENDS ${_web_out}/app.js ${_web_dir}/src/index.html ${_web_dir}/src/app.css
          ${CMAKE_SOURCE_DIR}/cmake/web_embed.cmake ${CMAKE_SOURCE_DIR}/cmake/embed_bytes.cmake
  COMMENT "web: embed index.html, app.js, app.css"
  VERBATIM)

target_sources(numprobe PRIVATE ${_web_out}/web_assets.cc)

# numprobe monitor-report: uPlot's prebuilt IIFE bundle and style from node_modules, and the
# report's plain-JS page script (no bundling needed).
add_custom_command(
  OUTPUT ${_web_out}/report_assets.cc
  COMMAND ${CMAKE_COMMAND} -DOUT=${_web_out}/report_assets.cc
          -DUPLOT_JS=${_web_dir}/node_modules/uplot/dist/uPlot.iife.min.js
          -DUPLOT_CSS=${_web_dir}/node_modules/uplot/dist/uPlot.min.css
          -DREPORT_JS=${_web_dir}/report/report.js -DREPORT_CSS=${_web_dir}/report/report.css
          -P ${CMAKE_SOURCE_DIR}/cmake/report_embed.cmake
  DEPENDS ${_web_out}/npm-ci.stamp ${_web_dir}/report/report.js ${_web_dir}/report/report.css
          ${CMAKE_SOURCE_DIR}/cmake/report_embed.cmake ${CMAKE_SOURCE_DIR}/cmake/embed_bytes.cmake
  COMMENT "web: embed uPlot and the monitor report page"
  VERBATIM)
target_sources(numprobe PRIVATE ${_web_out}/report_assets.cc)
