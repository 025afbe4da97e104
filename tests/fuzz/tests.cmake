# libFuzzer targets, each run for a bounded time (PAGODA_FUZZ_SECONDS) under
# ASan + UBSan. Label "fuzz"; part of the default test command.
find_program(CLANGXX NAMES clang++ clang++-14)
set(PAGODA_FUZZ_SECONDS 30 CACHE STRING "Seconds each fuzzer runs in the test suite")
if(CLANGXX)
  set(fuzz_dir ${PROJECT_BINARY_DIR}/fuzz)
  add_test(NAME fuzz_build
    COMMAND ${CMAKE_COMMAND} -E env CC=clang CXX=${CLANGXX}
            sh -c "${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${fuzz_dir} -G Ninja -DCMAKE_CXX_COMPILER=${CLANGXX} >/dev/null && ${CMAKE_COMMAND} --build ${fuzz_dir} -j2 && mkdir -p ${fuzz_dir}/corpus_gguf ${fuzz_dir}/corpus_model_config ${fuzz_dir}/corpus_tok ${fuzz_dir}/corpus_kv_block ${fuzz_dir}/corpus_kv_transfer && ${fuzz_dir}/gguf_fuzz_seeds ${fuzz_dir}/corpus_gguf && ${fuzz_dir}/gguf_fuzz_seeds ${fuzz_dir}/corpus_model_config && ${fuzz_dir}/kv_transfer_fuzz_seeds ${fuzz_dir}/corpus_kv_transfer")
  set_tests_properties(fuzz_build PROPERTIES FIXTURES_SETUP fuzz LABELS fuzz TIMEOUT 900)
  add_test(NAME fuzz_gguf
    COMMAND ${fuzz_dir}/gguf_fuzz -max_total_time=${PAGODA_FUZZ_SECONDS} -max_len=4096 -rss_limit_mb=2048 -print_final_stats=1 ${fuzz_dir}/corpus_gguf)
  set_tests_properties(fuzz_gguf PROPERTIES FIXTURES_REQUIRED fuzz LABELS fuzz TIMEOUT 300)
  add_test(NAME fuzz_model_config
    COMMAND ${fuzz_dir}/model_config_fuzz -max_total_time=${PAGODA_FUZZ_SECONDS} -max_len=4096 -rss_limit_mb=2048 -print_final_stats=1 ${fuzz_dir}/corpus_model_config)
  set_tests_properties(fuzz_model_config PROPERTIES FIXTURES_REQUIRED fuzz LABELS fuzz TIMEOUT 300)
  add_test(NAME fuzz_kv_block
    COMMAND ${fuzz_dir}/kv_block_fuzz -max_total_time=${PAGODA_FUZZ_SECONDS} -max_len=1024 -rss_limit_mb=2048 -print_final_stats=1 ${fuzz_dir}/corpus_kv_block)
  set_tests_properties(fuzz_kv_block PROPERTIES FIXTURES_REQUIRED fuzz LABELS fuzz TIMEOUT 300)
  add_test(NAME fuzz_kv_transfer
    COMMAND ${fuzz_dir}/kv_transfer_fuzz -max_total_time=${PAGODA_FUZZ_SECONDS} -max_len=4096 -rss_limit_mb=2048 -print_final_stats=1 ${fuzz_dir}/corpus_kv_transfer)
  set_tests_properties(fuzz_kv_transfer PROPERTIES FIXTURES_REQUIRED fuzz LABELS fuzz TIMEOUT 300)
  if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/tokenizer_fuzz.cc)
    add_test(NAME fuzz_tokenizer
      COMMAND ${fuzz_dir}/tokenizer_fuzz -max_total_time=${PAGODA_FUZZ_SECONDS} -max_len=2048 -rss_limit_mb=2048 -print_final_stats=1 ${fuzz_dir}/corpus_tok)
    set_tests_properties(fuzz_tokenizer PROPERTIES FIXTURES_REQUIRED fuzz LABELS fuzz TIMEOUT 300)
  endif()
else()
  message(WARNING "clang++ not found: libFuzzer targets are not built")
endif()
