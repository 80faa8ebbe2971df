# tests/install/run_install_test.cmake — install flux into a fresh prefix, then configure, build and run
# a separate CMake project that uses it through find_package(flux) and flux::flux.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "install test: ${what}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()
run_step("install" ${CMAKE_COMMAND} --install "${FLUX_BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
run_step("configure consumer" ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
         "-DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix")
run_step("build consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run_step("run consumer" "${WORK_DIR}/build/flux_consumer")
message(STATUS "${step_output}")
if(NOT step_output MATCHES "flux consumer: 21 configs")  # gemm_configs(): 15 16-bit + 6 FP8
  message(FATAL_ERROR "install test: unexpected consumer output:\n${step_output}")
endif()
