# Golden tests that run the node reference tokenizers (tests/tokenizer/npm):
# seconds per test, so they get their own executable, labelled "slow" and
# "tokenizer". They stay in the default run; `ctest -LE slow` skips them. The
# source is named *_golden.cc so that the pagoda_tokenizer_tests glob
# (*_test.cc) leaves it out.
add_executable(pagoda_tokenizer_golden_tests ${CMAKE_CURRENT_LIST_DIR}/hf_import_golden.cc
               ${CMAKE_CURRENT_LIST_DIR}/wpm_golden.cc
               ${CMAKE_CURRENT_LIST_DIR}/chat_template_golden.cc)
target_include_directories(pagoda_tokenizer_golden_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(pagoda_tokenizer_golden_tests PRIVATE
  PAGODA_TESTDATA_DIR="${PAGODA_TESTDATA_DIR}"
  PAGODA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  PAGODA_BINARY_DIR="${PROJECT_BINARY_DIR}")
target_link_libraries(pagoda_tokenizer_golden_tests PRIVATE pagoda_tokenizer GTest::gtest GTest::gtest_main)
gtest_discover_tests(pagoda_tokenizer_golden_tests DISCOVERY_TIMEOUT 60
                     TEST_LIST pagoda_tokenizer_golden_tests_TESTS)
# Labels are set here rather than through gtest_discover_tests(PROPERTIES):
# CMake 3.25 loses the ';' of a list value on its way to the discovery script,
# so "slow;tokenizer" would become LABELS=slow plus a stray property. This file
# is read by ctest after the discovered tests, whose names TEST_LIST holds.
set(golden_labels ${PROJECT_BINARY_DIR}/tests/pagoda_tokenizer_golden_tests_labels.cmake)
file(WRITE ${golden_labels}
  "if(pagoda_tokenizer_golden_tests_TESTS)\n"
  "  set_tests_properties(\${pagoda_tokenizer_golden_tests_TESTS} PROPERTIES LABELS \"slow;tokenizer\")\n"
  "endif()\n")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${golden_labels})
