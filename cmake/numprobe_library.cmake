# The one declaration of each library's floor (docs/architecture.md, "Floors").
#
#   numprobe_library(<name> [DIR <folder under src/>] [KIND STATIC|OBJECT]
#                    [USES <numprobe libraries>...] [PUBLIC_LINK <items>...] [LINK <items>...])
#
# builds numprobe_<name> from src/<DIR>/*.cc (DIR defaults to <name>), links the numprobe libraries
# it USES publicly, PUBLIC_LINK items publicly and LINK items privately. USES is also the floor:
# sources under src/<DIR> may include internal headers only from their own folder and from the
# folders of the libraries they use, directly or through those (scripts/check_includes.py reads
# these calls, so what a library links and what it may include cannot disagree).
#
#   numprobe_floor(<folder> USES <numprobe libraries>...)
#
# declares the floor of a folder whose sources a program compiles itself (the CLI and its server);
# it builds nothing. Each argument sits on the call's own lines as plain words: the include check
# parses them without running CMake.
function(numprobe_library name)
  cmake_parse_arguments(ARG "" "DIR;KIND" "USES;PUBLIC_LINK;LINK" ${ARGN})
  if(NOT ARG_DIR)
    set(ARG_DIR ${name})
  endif()
  if(NOT ARG_KIND)
    set(ARG_KIND STATIC)
  endif()
  file(GLOB _np_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${ARG_DIR}/*.cc)
  add_library(numprobe_${name} ${ARG_KIND} ${_np_sources})
  target_include_directories(numprobe_${name} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  list(TRANSFORM ARG_USES PREPEND numprobe_ OUTPUT_VARIABLE _np_uses)
  target_link_libraries(numprobe_${name} PUBLIC ${_np_uses} ${ARG_PUBLIC_LINK} PRIVATE ${ARG_LINK})
  target_compile_options(numprobe_${name} PRIVATE ${NUMPROBE_WARNINGS})
endfunction()

function(numprobe_floor folder)
endfunction()
