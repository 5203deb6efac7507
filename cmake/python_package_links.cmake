# numprobe_link_python_package(): a build whose Python modules go to their own package tree
# (NUMPROBE_PYTHON_OUTPUT_DIR other than the source tree's python/numprobe: the torch 2.x lane, the
# MindSpore lane) gets the package's Python files there as symbolic links, so PYTHONPATH=<its parent>
# imports that build's extensions with the source tree's Python code. Two builds cannot share
# python/numprobe: their extension files have one name.
function(numprobe_link_python_package)
  get_filename_component(_np_pkg_out "${NUMPROBE_PYTHON_OUTPUT_DIR}" ABSOLUTE)
  if(_np_pkg_out STREQUAL "${CMAKE_SOURCE_DIR}/python/numprobe" OR NUMPROBE_PYTHON_NO_LINKS)
    return()
  endif()
  file(GLOB _np_py_items CONFIGURE_DEPENDS RELATIVE ${CMAKE_SOURCE_DIR}/python/numprobe
       ${CMAKE_SOURCE_DIR}/python/numprobe/*.py ${CMAKE_SOURCE_DIR}/python/numprobe/*/__init__.py)
  foreach(_np_item IN LISTS _np_py_items)
    get_filename_component(_np_top "${_np_item}" DIRECTORY)
    if(_np_top STREQUAL "")
      set(_np_top "${_np_item}")  # a module beside __init__.py; else the subpackage's folder
    endif()
    if(NOT EXISTS "${_np_pkg_out}/${_np_top}")
      file(MAKE_DIRECTORY "${_np_pkg_out}")
      file(CREATE_LINK "${CMAKE_SOURCE_DIR}/python/numprobe/${_np_top}" "${_np_pkg_out}/${_np_top}" SYMBOLIC)
    endif()
  endforeach()
endfunction()
