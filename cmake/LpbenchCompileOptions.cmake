# Compile options shared by every lpbench target, and the precompiled torch header.

add_library(lpbench_options INTERFACE)
target_compile_options(lpbench_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual
    -Wimplicit-fallthrough -Wno-missing-field-initializers>
  $<$<AND:$<BOOL:${LPBENCH_WERROR}>,$<COMPILE_LANGUAGE:CXX>>:-Werror>)
target_include_directories(lpbench_options INTERFACE ${PROJECT_SOURCE_DIR})
if(LPBENCH_TORCH_CUDA)
  target_compile_definitions(lpbench_options INTERFACE LPBENCH_TORCH_CUDA=1)
endif()
if(LPBENCH_HAVE_CUDA)
  target_compile_definitions(lpbench_options INTERFACE LPBENCH_HAVE_CUDA=1)
endif()
# The glue from torch tensors to lpbench's CUDA kernels needs both.
if(LPBENCH_HAVE_CUDA AND LPBENCH_TORCH_CUDA)
  target_compile_definitions(lpbench_options INTERFACE LPBENCH_CUDA_GLUE=1)
endif()

# The torch wheel's libtorch.so exports its own copy of std::filesystem (statically linked from
# its build toolchain), and some of it crashes against the system's libstdc++ (seen: remove_all
# jumping to address 0). lpbench itself calls none of it (base/env/files.h); naming libstdc++
# first among the executables' libraries makes the dynamic linker bind such calls to the
# system's copy where torch makes them (this cured the crash on the CPU machine).
target_link_options(lpbench_options INTERFACE
  "LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")

find_program(LPBENCH_CCACHE ccache)
if(LPBENCH_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${LPBENCH_CCACHE})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${LPBENCH_CCACHE})
endif()

# One precompiled header for every translation unit that uses torch: <torch/torch.h> alone takes
# ~15 s to parse, and CI has two cores. Targets opt in with lpbench_use_torch_pch().
add_library(lpbench_torch_pch STATIC ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cpp)
target_link_libraries(lpbench_torch_pch PUBLIC lpbench_options ${TORCH_LIBRARIES} lpbench_fmt)
target_precompile_headers(lpbench_torch_pch PRIVATE
  <torch/torch.h> <fmt/format.h> <string> <vector> <optional> <memory>)

function(lpbench_use_torch_pch target)
  target_precompile_headers(${target} REUSE_FROM lpbench_torch_pch)
endfunction()
