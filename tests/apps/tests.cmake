# CLI tests: run the real `pagoda` binary on good and bad inputs.
# admin_cli_test.cc serves the admin routes in-process for `pagoda admin`.
add_executable(pagoda_cli_tests ${CMAKE_CURRENT_LIST_DIR}/cli_test.cc ${CMAKE_CURRENT_LIST_DIR}/admin_cli_test.cc)
target_include_directories(pagoda_cli_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
target_compile_definitions(pagoda_cli_tests PRIVATE
  PAGODA_TESTDATA_DIR="${PAGODA_TESTDATA_DIR}"
  PAGODA_BIN="$<TARGET_FILE:pagoda_cli>"
  PAGODA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  PAGODA_BINARY_DIR="${PROJECT_BINARY_DIR}")
target_link_libraries(pagoda_cli_tests PRIVATE pagoda nlohmann_json::nlohmann_json GTest::gtest GTest::gtest_main)
add_dependencies(pagoda_cli_tests pagoda_cli)
gtest_discover_tests(pagoda_cli_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
