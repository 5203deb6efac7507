# PyTorch capture: numprobe_capture_torch (C++ API + L2 observer), the Python module numprobe._C,
# and the libtorch example. Torch headers are system includes (warnings as errors stay ours).
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
# A pip-installed torch (and pybind11) keep their CMake packages inside site-packages: ask the
# interpreter the module is built for, so `-DPython3_EXECUTABLE=<venv>/bin/python` is enough.
foreach(_np_query "import torch.utils; print(torch.utils.cmake_prefix_path)"
                  "import pybind11; print(pybind11.get_cmake_dir())")
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "${_np_query}" OUTPUT_VARIABLE _np_dir
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _np_rc)
  if(_np_rc EQUAL 0 AND IS_DIRECTORY "${_np_dir}")
    list(APPEND CMAKE_PREFIX_PATH "${_np_dir}")
  endif()
endforeach()
set(Python_EXECUTABLE ${Python3_EXECUTABLE})
find_package(Torch REQUIRED)
if(Python_FOUND)
  # Torch 2.x finds FindPython's `Python` (interpreter only); pybind11 then builds modules with it.
  find_package(Python REQUIRED COMPONENTS Interpreter Development.Module)
endif()
find_package(pybind11 CONFIG REQUIRED)
message(STATUS "numprobe: torch ${Torch_VERSION}, python ${Python3_EXECUTABLE}")

# Torch's exported targets carry their include dirs as non-system; re-export them as SYSTEM.
add_library(numprobe_torch_deps INTERFACE)
target_include_directories(numprobe_torch_deps SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
target_link_libraries(numprobe_torch_deps INTERFACE ${TORCH_LIBRARIES})
target_compile_options(numprobe_torch_deps INTERFACE ${TORCH_CXX_FLAGS})

# Compiled once, linked twice: statically into the Python module, and as libnumprobe.so (the C++
# API that find_package(numprobe) gives libtorch programs).
file(GLOB NUMPROBE_CAPTURE_TORCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/capture/torch/*.cc)
add_library(numprobe_capture_torch_obj OBJECT ${NUMPROBE_CAPTURE_TORCH_SOURCES})
target_include_directories(numprobe_capture_torch_obj PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(numprobe_capture_torch_obj PUBLIC numprobe_capture_core numprobe_torch_deps)
target_compile_options(numprobe_capture_torch_obj PRIVATE ${NUMPROBE_WARNINGS})

add_library(numprobe_capture_torch STATIC $<TARGET_OBJECTS:numprobe_capture_torch_obj>)
target_link_libraries(numprobe_capture_torch PUBLIC numprobe_capture_core numprobe_torch_deps)

add_library(numprobe_shared SHARED $<TARGET_OBJECTS:numprobe_capture_torch_obj>)
set_target_properties(numprobe_shared PROPERTIES OUTPUT_NAME numprobe)
target_include_directories(numprobe_shared INTERFACE $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>)
target_link_libraries(numprobe_shared PRIVATE numprobe_capture_core numprobe_format numprobe_core
                                      PUBLIC numprobe_torch_deps)
add_library(numprobe::numprobe ALIAS numprobe_shared)

include(GNUInstallDirs)
install(TARGETS numprobe_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/numprobe DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
configure_file(${CMAKE_SOURCE_DIR}/cmake/numprobeConfig.cmake.in
               ${CMAKE_BINARY_DIR}/numprobeConfig.cmake @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/numprobeConfig.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/numprobe)

# The example program, built in-tree against the same target find_package(numprobe) provides.
add_subdirectory(${CMAKE_SOURCE_DIR}/examples ${CMAKE_BINARY_DIR}/examples)

find_library(TORCH_PYTHON_LIBRARY torch_python REQUIRED
             HINTS ${TORCH_INSTALL_PREFIX}/lib /usr/lib/x86_64-linux-gnu)
file(GLOB NUMPROBE_PY_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/src/*.cc)
pybind11_add_module(numprobe_python MODULE ${NUMPROBE_PY_SOURCES})
# In-tree (PYTHONPATH=python works after a build) unless setup.py asks for its own directory.
set(NUMPROBE_PYTHON_OUTPUT_DIR ${CMAKE_SOURCE_DIR}/python/numprobe CACHE PATH
    "Where numprobe._C is written")
set_target_properties(numprobe_python PROPERTIES
  OUTPUT_NAME _C
  LIBRARY_OUTPUT_DIRECTORY ${NUMPROBE_PYTHON_OUTPUT_DIR})
target_include_directories(numprobe_python PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/python/src)
target_link_libraries(numprobe_python PRIVATE numprobe_capture_torch ${TORCH_PYTHON_LIBRARY})
target_compile_definitions(numprobe_python PRIVATE TORCH_EXTENSION_NAME=_C TORCH_API_INCLUDE_EXTENSION_H
  PYBIND11_COMPILER_TYPE="_gcc" PYBIND11_STDLIB="_libstdcpp" PYBIND11_BUILD_ABI="_cxxabi1017")
target_compile_options(numprobe_python PRIVATE ${NUMPROBE_WARNINGS})

# acc-check replay: aten ops through the dispatcher, device vs reference comparison. Linked into
# the Python module, where the L1 replay runs.
file(GLOB NUMPROBE_REPLAY_TORCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/replay/torch/*.cc)
add_library(numprobe_replay_torch STATIC ${NUMPROBE_REPLAY_TORCH_SOURCES})
target_include_directories(numprobe_replay_torch PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(numprobe_replay_torch PUBLIC numprobe_acccheck numprobe_capture_torch)
target_compile_options(numprobe_replay_torch PRIVATE ${NUMPROBE_WARNINGS})
# numprobe_compare: the MindSpore -> PyTorch API table acc-check replays MindSpore dumps with.
target_link_libraries(numprobe_python PRIVATE numprobe_replay_torch numprobe_compare)
