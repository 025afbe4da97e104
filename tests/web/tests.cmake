# The web console in a real browser (tests/web/console.test.mjs): playwright-core
# (tests/web/package-lock.json; `npm ci` there, which scripts/setup --tests
# runs) driving Debian's chromium against real `pagoda serve` processes.
# Skips (exit 0, "skipped") without node_modules, chromium or the test model.
# Screenshots of each page go to <build>/web-artifacts.
find_program(PAGODA_NODE node)
if(PAGODA_NODE)
  add_test(NAME web_console
           COMMAND ${PAGODA_NODE} ${CMAKE_CURRENT_LIST_DIR}/console.test.mjs
                   $<TARGET_FILE:pagoda_cli> ${PAGODA_TESTDATA_DIR}/stories260K.gguf ${PROJECT_BINARY_DIR}/web-artifacts
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
  # A browser and three servers: alone, so its timings hold.
  set_tests_properties(web_console PROPERTIES LABELS "e2e;web" TIMEOUT 300 RUN_SERIAL TRUE
                       SKIP_REGULAR_EXPRESSION "^skipped:")
endif()
