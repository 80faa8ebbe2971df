# cmake/FluxGTest.cmake — GoogleTest (Debian's libgtest-dev, installed by scripts/setup.sh).
#
# Override: -DFLUX_GTEST_DIR=<prefix> (a GoogleTest install with lib/cmake/GTest). Result: GTest::gtest,
# GTest::gtest_main.

set(FLUX_GTEST_DIR "" CACHE PATH "GoogleTest install prefix instead of the system's")
if(FLUX_GTEST_DIR)
  list(PREPEND CMAKE_PREFIX_PATH "${FLUX_GTEST_DIR}")
endif()
find_package(GTest)
if(NOT GTest_FOUND AND NOT GTEST_FOUND)
  message(FATAL_ERROR "flux: GoogleTest not found. Run scripts/setup.sh (installs Debian's libgtest-dev) "
                      "or set -DFLUX_GTEST_DIR=<prefix>, or configure with -DFLUX_BUILD_TESTS=OFF")
endif()
