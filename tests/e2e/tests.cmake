# E2E: the real `pagoda serve` driven by the official openai npm client
# (tests/e2e/package-lock.json; `npm ci` there, which scripts/setup --tests
# runs). Skips (exit 0, "skipped") without node_modules or the test model.
find_program(PAGODA_NODE node)
if(PAGODA_NODE)
  add_test(NAME e2e_serve_openai
           COMMAND ${PAGODA_NODE} ${CMAKE_CURRENT_LIST_DIR}/serve_openai.test.mjs
                   $<TARGET_FILE:pagoda_cli> ${PAGODA_TESTDATA_DIR}/stories260K.gguf
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
  set_tests_properties(e2e_serve_openai PROPERTIES LABELS e2e TIMEOUT 300
                       SKIP_REGULAR_EXPRESSION "^skipped:")
endif()
