# numprobe._engine: the torch-free engine binding Python fronts other than torch use (MindSpore's
# capture, python/numprobe/mindspore). It links the engine libraries only, never libtorch, so it
# builds in every non-sanitizer build for the interpreter named by Python3_EXECUTABLE: the release
# build's /usr/bin/python3, the MindSpore lane's .venv/mindspore/bin/python (CMakePresets.json).
if(NOT TARGET Python3::Module)
  find_package(Python3 COMPONENTS Interpreter Development.Module)
endif()
if(NOT TARGET pybind11::module)
  find_package(pybind11 CONFIG QUIET)
endif()
if(NOT Python3_FOUND OR NOT TARGET pybind11::module)
  message(STATUS "numprobe: no Python headers or pybind11: numprobe._engine is not built")
  return()
endif()
file(GLOB NUMPROBE_ENGINE_PY_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/engine_src/*.cc)
pybind11_add_module(numprobe_engine_python MODULE ${NUMPROBE_ENGINE_PY_SOURCES})
set_target_properties(numprobe_engine_python PROPERTIES
  OUTPUT_NAME _engine
  LIBRARY_OUTPUT_DIRECTORY ${NUMPROBE_PYTHON_OUTPUT_DIR})
target_include_directories(numprobe_engine_python PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/python/engine_src)
target_link_libraries(numprobe_engine_python PRIVATE numprobe_convert numprobe_monitor numprobe_acc_check numprobe_capture numprobe_format numprobe_core numprobe_base)
target_compile_options(numprobe_engine_python PRIVATE ${NUMPROBE_WARNINGS})
include(${CMAKE_SOURCE_DIR}/cmake/python_package_links.cmake)
numprobe_link_python_package()
install(TARGETS numprobe_engine_python LIBRARY DESTINATION lib/numprobe/python/numprobe)
message(STATUS "numprobe: numprobe._engine for ${Python3_EXECUTABLE}")
