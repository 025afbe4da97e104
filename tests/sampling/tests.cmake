# JSON Schema -> grammar corpus test (tests/sampling/grammar/json_schema_corpus.cc):
# random outputs of every schema in tests/sampling/grammar/schemas are checked
# with ajv by validate_corpus.mjs (`npm ci` in tests/sampling/grammar; skips
# without it or without node). A few seconds, so it keeps the "unit" label.
add_executable(pagoda_grammar_corpus_tests ${CMAKE_CURRENT_LIST_DIR}/grammar/json_schema_corpus.cc)
target_include_directories(pagoda_grammar_corpus_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(pagoda_grammar_corpus_tests PRIVATE
  PAGODA_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  PAGODA_BINARY_DIR="${PROJECT_BINARY_DIR}")
target_link_libraries(pagoda_grammar_corpus_tests PRIVATE pagoda_sampling GTest::gtest GTest::gtest_main)
gtest_discover_tests(pagoda_grammar_corpus_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit)
