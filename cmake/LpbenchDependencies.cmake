# Every third-party dependency of lpbench is found here, by package name.

# --- libtorch --------------------------------------------------------------------------------
# The C++ API comes from the `torch` Python wheel (pinned to the GPU machine's version), so one
# code base compiles against one API everywhere. scripts/setup installs it into .venv when no
# torch is present; here we only locate its CMake package without importing torch (importing
# would need the wheel's Python dependencies, which a C++ build does not).
set(LPBENCH_TORCH_VERSION_WANTED 2.11.0)
if(NOT Torch_DIR AND NOT DEFINED ENV{Torch_DIR})
  set(_lpbench_pythons "$ENV{LPBENCH_PYTHON}" "${CMAKE_SOURCE_DIR}/.venv/bin/python3" python3)
  foreach(_py IN LISTS _lpbench_pythons)
    if(NOT _py)
      continue()
    endif()
    execute_process(
      COMMAND ${_py} -c
        "import importlib.util, os; s = importlib.util.find_spec('torch'); print(os.path.join(s.submodule_search_locations[0], 'share', 'cmake') if s else '')"
      OUTPUT_VARIABLE _torch_cmake OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0 AND _torch_cmake AND EXISTS "${_torch_cmake}/Torch/TorchConfig.cmake")
      set(Torch_DIR "${_torch_cmake}/Torch" CACHE PATH "libtorch's CMake package (from the torch wheel)")
      break()
    endif()
  endforeach()
endif()

# torch's CMake package compiles nothing of ours, but it probes nvcc and sets arch flags from
# TORCH_CUDA_ARCH_LIST; Hopper is the target, so say so rather than let it guess.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "9.0" CACHE STRING "Architectures torch's CMake package assumes")
endif()
find_package(Torch REQUIRED)
if(NOT Torch_VERSION MATCHES "^${LPBENCH_TORCH_VERSION_WANTED}")
  message(WARNING "lpbench targets libtorch ${LPBENCH_TORCH_VERSION_WANTED}; found ${Torch_VERSION}. "
                  "Run scripts/setup to install the pinned wheel into .venv.")
endif()

# torch's CUDA libraries are usable when the wheel has them and every library they need resolves
# (scripts/setup installs the few the CUDA toolkit lacks). Then the CUDA glue builds here too.
set(LPBENCH_TORCH_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(LPBENCH_TORCH_CUDA ON)
endif()

# --- CUDA kernels -----------------------------------------------------------------------------
set(LPBENCH_HAVE_CUDA OFF)
if(NOT LPBENCH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(LPBENCH_HAVE_CUDA ON)
  elseif(LPBENCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LPBENCH_CUDA=ON but no CUDA compiler was found; install the CUDA toolkit "
                        "or configure with -DLPBENCH_CUDA=AUTO")
  endif()
endif()

# --- the rest ---------------------------------------------------------------------------------
find_package(fmt REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
if(LPBENCH_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
find_package(benchmark REQUIRED)
# c10d's ProcessGroupGloo.hpp includes Gloo's headers, which the torch wheel does not ship (its
# Gloo is compiled into libtorch_cpu). Debian's libgloo-dev supplies them; only the headers are
# used, never its library. On the GPU machine they come in .gpu-bundle (scripts/gpu-bundle).
find_path(LPBENCH_GLOO_INCLUDE_DIR gloo/algorithm.h
  HINTS "${CMAKE_SOURCE_DIR}/.gpu-bundle/gloo/usr/include")
if(NOT LPBENCH_GLOO_INCLUDE_DIR)
  message(FATAL_ERROR "Gloo's headers (gloo/algorithm.h) were not found: run scripts/setup, which "
                      "installs Debian's libgloo-dev")
endif()
find_package(SentencePiece REQUIRED)
# Debian's libsentencepiece exports FLAGS_minloglevel as a 32-byte flag object; libc10 exports the
# same name as a 4-byte int. The library first in a program's symbol scope owns the name. When that
# is libc10, sentencepiece's static constructor writes its 32 bytes over libc10's flags, setting
# caffe2_use_fatal_for_enforce, and every failed TORCH enforce (an allocation failure among them)
# aborts the process instead of throwing. Listing sentencepiece ahead of everything on every link
# line puts it first in the scope, so both libraries use its object.
add_link_options(LINKER:--no-as-needed ${SentencePiece_TRAIN_LIBRARY} ${SentencePiece_LIBRARY})

# torch ships fmt headers (v12) in its include directory; they shadow the system fmt (v9) in any
# file that also sees torch's includes. Header-only fmt links nothing, so whichever headers a
# file sees are self-consistent (the two live in different inline namespaces).
add_library(lpbench_fmt INTERFACE)
target_link_libraries(lpbench_fmt INTERFACE fmt::fmt-header-only)
