# Stands in for CANN's ascendc.cmake when the samples of hicann/runtime are
# built against acld (tools/samples/run.sh): acld has no Ascend C compiler, so
# `ascendc_library(NAME TYPE SOURCES...)` builds, instead of the Ascend C
# sources it is given, kernel_shim.cc beside this file, which defines the
# samples' kernel entry points (EasyOP, ShortOP, ..., VectorAddDo) as
# launches of the sim's built-in kernels (acl/acl_sim.h).
set(ACLD_SAMPLES_SHIM_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(ascendc_library name type)
  add_library(${name} ${type} "${ACLD_SAMPLES_SHIM_DIR}/kernel_shim.cc")
  target_include_directories(${name} PUBLIC "${ASCEND_CANN_PACKAGE_PATH}/include")
  target_link_directories(${name} PUBLIC "${ASCEND_CANN_PACKAGE_PATH}/lib64")
  target_link_libraries(${name} PUBLIC ascendcl)
endfunction()
