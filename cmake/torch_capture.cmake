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
# A CUDA build of torch (pip's default) needs its toolkit, and NVRTC, named to its CMake files even
# for code that uses neither directly; scripts/torch_cmake_args.py finds them (nothing for a CPU torch).
# A value the user set wins.
execute_process(COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/scripts/torch_cmake_args.py
                OUTPUT_VARIABLE _np_torch_args OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_VARIABLE _np_torch_err RESULT_VARIABLE _np_rc)
if(NOT _np_rc EQUAL 0)
  message(FATAL_ERROR "numprobe: ${_np_torch_err}")
endif()
string(REPLACE "\n" ";" _np_torch_args "${_np_torch_args}")
foreach(_np_arg IN LISTS _np_torch_args)
  if(_np_arg MATCHES "^-D([A-Za-z_]+)=(.*)$" AND NOT DEFINED ${CMAKE_MATCH_1})
    set(${CMAKE_MATCH_1} "${CMAKE_MATCH_2}" CACHE PATH "found by scripts/torch_cmake_args.py")
  endif()
endforeach()
# A CUDA torch's CMake files append the architectures they detect to CMAKE_CUDA_FLAGS (with no GPU
# present: all of torch's, some of which a newer nvcc refuses). numprobe's kernel is torch-free and
# names its own architectures below, so it keeps the flags it had.
set(_np_cuda_flags "${CMAKE_CUDA_FLAGS}")
find_package(Torch REQUIRED)
set(CMAKE_CUDA_FLAGS "${_np_cuda_flags}")
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
# Torch's headers name the C++ standard they need on its `torch` target (14 for Debian's 1.13, 20 for
# torch >= 2.10), as a plain property that does not propagate. The engine stays C++17; code that
# includes torch is compiled to torch's standard where that is newer.
get_target_property(_np_torch_std torch CXX_STANDARD)
if(_np_torch_std AND _np_torch_std GREATER 17)
  target_compile_features(numprobe_torch_deps INTERFACE cxx_std_${_np_torch_std})
  message(STATUS "numprobe: torch's headers need C++${_np_torch_std}: the torch side builds with it")
endif()

# The torch room (src/torch/, docs/architecture.md): everything that includes torch. Its floor,
# numprobe_torch (src/torch/*.cc): torch's element types by name, device statistics (and the CUDA
# kernel below), the statistics cache, tensor leaves. Then the fronts inside it: capture (the C++
# API and the Python module's recorder), the monitor's collector, and acc-check's aten replay.
# (src/ is a -I directory, so a header named like one of libtorch's <torch/*.h> would shadow it:
# names in src/torch/ stay numprobe's own.)
numprobe_library(torch
  USES capture
  PUBLIC_LINK numprobe_torch_deps)
numprobe_library(torch_capture
  DIR torch/capture
  USES torch capture)
numprobe_library(torch_monitor
  DIR torch/monitor
  USES torch monitor)

# The fused CUDA statistics kernel, where torch was built with CUDA and nvcc is found. It is compiled
# without torch (plain pointers and a stream in; see cuda/device_stats_kernel.h); without it CUDA
# tensors are reduced by ATen ops.
option(NUMPROBE_WITH_CUDA "Build the fused CUDA statistics kernel (needs nvcc and a CUDA torch)" ON)
set(NUMPROBE_CUDA_KERNEL OFF)
if(NUMPROBE_WITH_CUDA AND TORCH_CUDA_LIBRARIES AND CMAKE_VERSION VERSION_LESS 3.23)
  message(STATUS "numprobe: the fused CUDA statistics kernel needs CMake 3.23 (ATen reductions instead)")
elseif(NUMPROBE_WITH_CUDA AND TORCH_CUDA_LIBRARIES)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # auto: the architectures torch itself was built for (asking needs no GPU) that CMake knows
    # this nvcc to target, as real ones, plus PTX of the newest; all-major where torch does not say. (Not
    # CMAKE_CUDA_ARCHITECTURES: enable_language caches nvcc's default there.)
    set(NUMPROBE_CUDA_ARCHITECTURES auto CACHE STRING
        "CUDA architectures of the statistics kernel (auto: torch's)")
    set(_np_archs all-major)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c
      "import torch; print(';'.join(a[3:] for a in torch._C._cuda_getArchFlags().split() if a.startswith('sm_')))"
      OUTPUT_VARIABLE _np_torch_archs OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _np_rc)
    # CMAKE_CUDA_ARCHITECTURES_ALL reads like "75-real;...;121": compare the numbers.
    list(TRANSFORM CMAKE_CUDA_ARCHITECTURES_ALL REPLACE "-.*$" "" OUTPUT_VARIABLE _np_nvcc_archs)
    if(_np_rc EQUAL 0 AND _np_torch_archs AND _np_nvcc_archs)
      set(_np_real)
      foreach(_np_a IN LISTS _np_torch_archs)
        if(_np_a IN_LIST _np_nvcc_archs)
          list(APPEND _np_real ${_np_a}-real)
          set(_np_newest ${_np_a})
        endif()
      endforeach()
      if(_np_real)
        set(_np_archs ${_np_real} ${_np_newest}-virtual)
      endif()
    endif()
    if(NOT NUMPROBE_CUDA_ARCHITECTURES STREQUAL "auto")
      set(_np_archs ${NUMPROBE_CUDA_ARCHITECTURES})
    endif()
    find_package(CUDAToolkit REQUIRED)
    add_library(numprobe_cuda_stats STATIC ${CMAKE_SOURCE_DIR}/src/torch/cuda/device_stats_kernel.cu
                                           ${CMAKE_SOURCE_DIR}/src/torch/cuda/pinned_staging.cc)
    target_compile_options(numprobe_cuda_stats PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${NUMPROBE_WARNINGS}>")
    target_include_directories(numprobe_cuda_stats PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include)
    set_target_properties(numprobe_cuda_stats PROPERTIES CUDA_STANDARD 17 POSITION_INDEPENDENT_CODE ON
                                                         CUDA_ARCHITECTURES "${_np_archs}")
    target_link_libraries(numprobe_cuda_stats PUBLIC CUDA::cudart)
    target_compile_definitions(numprobe_torch PRIVATE NUMPROBE_CUDA_STATS_KERNEL)
    target_link_libraries(numprobe_torch PRIVATE numprobe_cuda_stats CUDA::cudart)
    set(NUMPROBE_CUDA_KERNEL ON)
  endif()
endif()
message(STATUS "numprobe: fused CUDA statistics kernel ${NUMPROBE_CUDA_KERNEL} ${_np_archs}")

# Compiled once, linked twice: statically into the Python module (numprobe_capture_torch), and as
# libnumprobe.so (the C++ API that find_package(numprobe) gives libtorch programs), which holds the
# torch room's archives whole.
add_library(numprobe_capture_torch INTERFACE)
target_link_libraries(numprobe_capture_torch INTERFACE numprobe_torch_capture numprobe_torch_monitor numprobe_torch)

set(_np_torch_archives numprobe_torch_capture numprobe_torch_monitor numprobe_torch)
set(_np_whole)
foreach(_np_a IN LISTS _np_torch_archives)
  list(APPEND _np_whole "$<TARGET_FILE:${_np_a}>")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/numprobe_shared.cc "// libnumprobe.so: the torch room's archives, linked whole.\n")
add_library(numprobe_shared SHARED ${CMAKE_BINARY_DIR}/numprobe_shared.cc)
add_dependencies(numprobe_shared ${_np_torch_archives})
set_target_properties(numprobe_shared PROPERTIES OUTPUT_NAME numprobe)
target_include_directories(numprobe_shared INTERFACE $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>)
target_link_libraries(numprobe_shared PRIVATE -Wl,--whole-archive ${_np_whole} -Wl,--no-whole-archive
                                              numprobe_capture numprobe_monitor numprobe_format numprobe_core
                                      PUBLIC numprobe_torch_deps)
add_library(numprobe::numprobe ALIAS numprobe_shared)
if(NUMPROBE_CUDA_KERNEL)
  target_link_libraries(numprobe_shared PRIVATE numprobe_cuda_stats)
endif()

# Installed, libnumprobe.so still finds the torch (and CUDA runtime) it was built against where those
# are not in a system directory (pip's torch lives in site-packages): they become its RUNPATH.
set(_np_rpath "${TORCH_INSTALL_PREFIX}/lib")
if(NUMPROBE_CUDA_KERNEL)
  list(APPEND _np_rpath "${CUDAToolkit_LIBRARY_DIR}")
endif()
list(REMOVE_ITEM _np_rpath ${CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES})
set_target_properties(numprobe_shared PROPERTIES INSTALL_RPATH "${_np_rpath}")

install(TARGETS numprobe_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/numprobe/capture.h ${CMAKE_SOURCE_DIR}/include/numprobe/capture_scope.h
              ${CMAKE_SOURCE_DIR}/include/numprobe/monitor.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/numprobe)
get_filename_component(NUMPROBE_TORCH_CMAKE_PREFIX "${Torch_DIR}" DIRECTORY)

# The example program, built in-tree against the same target find_package(numprobe) provides.
add_subdirectory(${CMAKE_SOURCE_DIR}/examples ${CMAKE_BINARY_DIR}/examples)

find_library(TORCH_PYTHON_LIBRARY torch_python REQUIRED
             HINTS ${TORCH_INSTALL_PREFIX}/lib /usr/lib/x86_64-linux-gnu)
file(GLOB NUMPROBE_PY_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/python/src/*.cc)
pybind11_add_module(numprobe_python MODULE ${NUMPROBE_PY_SOURCES})
# In-tree (PYTHONPATH=python works after a build) unless setup.py or a second build (the torch 2.x
# lane) asks for its own directory (cmake/python_package_links.cmake).
include(${CMAKE_SOURCE_DIR}/cmake/python_package_links.cmake)
numprobe_link_python_package()
set_target_properties(numprobe_python PROPERTIES
  OUTPUT_NAME _C
  LIBRARY_OUTPUT_DIRECTORY ${NUMPROBE_PYTHON_OUTPUT_DIR})
target_include_directories(numprobe_python PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/python/src)
target_link_libraries(numprobe_python PRIVATE numprobe_capture_torch ${TORCH_PYTHON_LIBRARY})
target_compile_definitions(numprobe_python PRIVATE TORCH_EXTENSION_NAME=_C TORCH_API_INCLUDE_EXTENSION_H
  PYBIND11_COMPILER_TYPE="_gcc" PYBIND11_STDLIB="_libstdcpp" PYBIND11_BUILD_ABI="_cxxabi1017")
target_compile_options(numprobe_python PRIVATE ${NUMPROBE_WARNINGS})
# Installed beside the package's Python files (CMakeLists.txt), finding its torch as libnumprobe does.
set_target_properties(numprobe_python PROPERTIES INSTALL_RPATH "${_np_rpath}")
install(TARGETS numprobe_python LIBRARY DESTINATION lib/numprobe/python/numprobe)

# acc-check replay: aten ops through the dispatcher, device vs reference comparison. Linked into
# the Python module, where the L1 replay runs.
numprobe_library(torch_replay
  DIR torch/replay
  USES torch acc_check)
# numprobe_compare: the MindSpore -> PyTorch API table acc-check replays MindSpore dumps with.
target_link_libraries(numprobe_python PRIVATE numprobe_torch_replay numprobe_compare)
# grad_probe's writer (task "grad_probe": PrecisionDebugger.monitor).
target_link_libraries(numprobe_python PRIVATE numprobe_grad_probe)
