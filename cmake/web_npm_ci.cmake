# cmake -P: `npm ci` in WEB_DIR unless WEB_DIR/node_modules already holds this package-lock.json
# (its hash in node_modules/.numprobe-stamp), then touches STAMP (the build dir's own). Several
# build dirs share web/node_modules; a file lock keeps two builds from running npm ci at once.
file(SHA256 ${WEB_DIR}/package-lock.json _lock_hash)
set(_shared_stamp ${WEB_DIR}/node_modules/.numprobe-stamp)
file(LOCK ${WEB_DIR}/.npm-ci.lock GUARD PROCESS TIMEOUT 600)
set(_have "")
if(EXISTS ${_shared_stamp})
  file(READ ${_shared_stamp} _have)
endif()
if(NOT _have STREQUAL _lock_hash)
  execute_process(
    COMMAND ${NPM} ci --no-audit --no-fund --prefer-offline --loglevel=error
    WORKING_DIRECTORY ${WEB_DIR}
    OUTPUT_VARIABLE _out ERROR_VARIABLE _out
    RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "npm ci in ${WEB_DIR} failed (${_rc}):\n${_out}")
  endif()
  file(WRITE ${_shared_stamp} ${_lock_hash})
endif()
file(LOCK ${WEB_DIR}/.npm-ci.lock RELEASE)
file(TOUCH ${STAMP})
