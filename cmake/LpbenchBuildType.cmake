# The build type stamped into every run's provenance: CMake's build type, and the wgmma kernel's
# timing knobs where a build has them (LPBENCH_WGMMA_DIAG, kernels/cuda/CMakeLists.txt), so that
# runs of a diagnostic build cannot pass for the shipped kernel's.
#   lpbench_build_type(OUT_VAR BUILD_TYPE DIAG_LIST)
function(lpbench_build_type out build_type diag)
  set(stamp "${build_type}")
  if(diag)
    string(REPLACE ";" " " diag_words "${diag}")
    set(stamp "${build_type} + wgmma diagnostics ${diag_words}")
  endif()
  set(${out} "${stamp}" PARENT_SCOPE)
endfunction()
