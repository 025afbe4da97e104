# The run's PostgreSQL server (tests/support/pg_fixture.sh): started before the
# tests that need it (FIXTURES_REQUIRED postgres), stopped after them. Each
# test creates a fresh database and drops it (tests/support/postgres_instance.h).
add_test(NAME postgres_server_start
         COMMAND ${PROJECT_SOURCE_DIR}/tests/support/pg_fixture.sh start ${PROJECT_BINARY_DIR}/test-postgres)
set_tests_properties(postgres_server_start PROPERTIES FIXTURES_SETUP postgres LABELS unit)
add_test(NAME postgres_server_stop
         COMMAND ${PROJECT_SOURCE_DIR}/tests/support/pg_fixture.sh stop ${PROJECT_BINARY_DIR}/test-postgres)
set_tests_properties(postgres_server_stop PROPERTIES FIXTURES_CLEANUP postgres LABELS unit)
