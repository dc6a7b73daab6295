# Build provenance (version, git commit, dirty flag, compiler) compiled into lpbench.
# The generator runs on every build but rewrites its output only when the content changed, so
# a commit or an edit re-stamps the binary without rebuilding anything else.
set(LPBENCH_BUILD_INFO_CPP ${PROJECT_BINARY_DIR}/generated/build_info.cpp)
include(LpbenchBuildType)
lpbench_build_type(_lpbench_build_type "${CMAKE_BUILD_TYPE}" "${LPBENCH_WGMMA_DIAG}")
set(_lpbench_build_info_args
  -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
  -DOUTPUT=${LPBENCH_BUILD_INFO_CPP}
  -DVERSION=${PROJECT_VERSION}
  "-DBUILD_TYPE=${_lpbench_build_type}"
  "-DCOMPILER=${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}"
  -P ${PROJECT_SOURCE_DIR}/cmake/WriteBuildInfo.cmake)
execute_process(COMMAND ${CMAKE_COMMAND} ${_lpbench_build_info_args})
add_custom_target(lpbench_build_info_stamp ALL
  COMMAND ${CMAKE_COMMAND} ${_lpbench_build_info_args}
  BYPRODUCTS ${LPBENCH_BUILD_INFO_CPP}
  COMMENT "Stamping build provenance")
add_library(lpbench_build_info STATIC ${LPBENCH_BUILD_INFO_CPP})
add_dependencies(lpbench_build_info lpbench_build_info_stamp)
target_link_libraries(lpbench_build_info PUBLIC lpbench_options)
