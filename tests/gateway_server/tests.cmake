# The gateway's request tokens against a running `pagoda serve`. It needs the
# server (and so the engine), which pagoda_gateway never links, so it is an
# executable of its own rather than part of pagoda_gateway_tests (which links
# the gateway layer alone and so proves it builds without the engine).
file(GLOB gateway_server_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cc)
add_executable(pagoda_gateway_server_tests ${gateway_server_srcs})
target_include_directories(pagoda_gateway_server_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
target_compile_definitions(pagoda_gateway_server_tests PRIVATE
  PAGODA_TESTDATA_DIR="${PAGODA_TESTDATA_DIR}"
  PAGODA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  PAGODA_BINARY_DIR="${PROJECT_BINARY_DIR}")
target_link_libraries(pagoda_gateway_server_tests PRIVATE pagoda pagoda_gateway GTest::gtest GTest::gtest_main)
gtest_discover_tests(pagoda_gateway_server_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
