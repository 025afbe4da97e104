# E2E: the real `pagoda serve` driven by the official openai npm client
# (tests/e2e/package-lock.json; `npm ci` there, which scripts/setup --tests
# runs). Each suite skips (exit 0, "skipped") without node_modules or the
# test model. harness.mjs holds what the newer suites share.
#   serve_openai      the routes through the client (chat, completions, n, stop, logprobs, ...)
#   batch_invariance  16 concurrent greedy requests == `pagoda generate` alone, prefix cache on/off
#                     (also on the qwen2moe / deepseek2 fixtures with f16 and FP8 KV)
#   mla_kv_capacity   an MLA model's reported KV capacity is the latent's size in every KV dtype
#   cache_invariance  every KV dtype: cold / warm / partly warm / batched / preempted == alone, greedy and seeded
#   bad_input         every class of bad request: its 4xx and an OpenAI error object
#   soak              PAGODA_SOAK_SECONDS (20) of valid, malformed and abandoned requests; no leaks
#   pressure          tiny KV cache (preemption) and --max-waiting 1 (429 + Retry-After)
#   kv_integrity      a planted KV page fault (--testing-kv-fault): 500 kv_cache_integrity, SSE error, metric
#   structured_outputs  response_format / tools / grammar / regex enforced (ajv-validated), 400s, the schema corpus
#   gateway           `pagoda gateway` over 2 replicas: proxy, streaming, models, 404, SIGHUP reload, kill -9, admin 401
#   gateway_rollout   `pagoda gateway rollout` under load over 4 replicas: red-black v1 -> v2, v3 failing health, pinned, abort
#   kv_events         --kv-events: vLLM-layout msgpack over ZeroMQ (zeromq + @msgpack/msgpack), replay, bad flags
#   gateway_cluster   4 replicas with KV events behind a cache_aware gateway: sessions stay on their prefix's
#                     replica (vs round_robin), predicted == reported cached tokens, saturation spreads, gateway
#                     restart rebuilds from replay, kill -9 under load, abandoned-stream soak leaves no load
#   control_plane     two gateways sharing one control-plane store in front of a replica that trusts
#                     their signed tenant headers: keys (401/403, revocation through the other gateway),
#                     exact limits across both, token settlement, ledger == client usage (kill -9),
#                     cache isolation per tenant / key, zero retention of a canary; on SQLite, and
#                     on PostgreSQL with its own counters and with Redis counters
#   gateway_tls       https upstream behind nginx with a throwaway CA (openssl CLI): ca_file works (plain and
#                     streamed, key checked by nginx, keep-alive), system store and wrong host name fail with 502
#   batch_api         --data-dir: the openai client's files and batches calls, 200 lines (malformed, duplicate
#                     ids) through kill -9 + restart answered exactly once, ledger == output usage, cancel,
#                     bad input, tenant isolation, zero retention after the files are deleted
#   kv_offload        --kv-offload disk: every KV dtype and the MLA fixture, evicted blocks restored from disk give
#                     the uncached answer (text and logprobs), restart, corrupted block recomputed, other fingerprint
#   pd_disagg         --role prefill / decode pairs: token-identical to colocated (same precision, and Q8_0+FP8
#                     prefill -> q4_0+FP8 decode), f16 -> FP8 conversion, dead / stalled / malformed transfers
#   embeddings        /v1/embeddings through the openai client (float, base64, dimensions) and LangChain.js,
#                     batch invariance among 64 inputs and generation, echo + max_tokens 0, bad input; with a
#                     make-model bert cross-encoder: /v1/rerank == /v1/score per pair, top_n, wrong endpoints
#   tls               https on `pagoda serve --tls-cert/--tls-key` and on a TLS gateway (plain and https replicas):
#                     openai client chat + stream, plain HTTP gets 400, untrusted CA fails, SIGHUP reloads the cert
find_program(PAGODA_NODE node)
if(PAGODA_NODE)
  foreach(suite serve_openai batch_invariance cache_invariance bad_input soak pressure kv_integrity structured_outputs
                gateway kv_events gateway_cluster gateway_rollout gateway_tls tls mla_kv_capacity batch_api kv_offload pd_disagg
                embeddings)
    add_test(NAME e2e_${suite}
             COMMAND ${PAGODA_NODE} ${CMAKE_CURRENT_LIST_DIR}/${suite}.test.mjs
                     $<TARGET_FILE:pagoda_cli> ${PAGODA_TESTDATA_DIR}/stories260K.gguf
             WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
    set_tests_properties(e2e_${suite} PROPERTIES LABELS e2e TIMEOUT 300
                         SKIP_REGULAR_EXPRESSION "^skipped:")
  endforeach()
  # Batch invariance on the MoE and MLA fixtures (stories260K's vocabulary),
  # with f16 and FP8 KV.
  foreach(moe qwen2moe deepseek2)
    foreach(kv f16 fp8_e4m3)
      add_test(NAME e2e_batch_invariance_${moe}_${kv}
               COMMAND ${CMAKE_COMMAND} -E env PAGODA_E2E_KV_DTYPE=${kv}
                       ${PAGODA_NODE} ${CMAKE_CURRENT_LIST_DIR}/batch_invariance.test.mjs
                       $<TARGET_FILE:pagoda_cli> ${PAGODA_TESTDATA_DIR}/synthetic/${moe}.gguf
               WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
      set_tests_properties(e2e_batch_invariance_${moe}_${kv} PROPERTIES LABELS e2e TIMEOUT 300
                           SKIP_REGULAR_EXPRESSION "^skipped:")
    endforeach()
  endforeach()
  add_test(NAME e2e_control_plane
           COMMAND ${PAGODA_NODE} ${CMAKE_CURRENT_LIST_DIR}/control_plane.test.mjs
                   $<TARGET_FILE:pagoda_cli> ${PAGODA_TESTDATA_DIR}/stories260K.gguf
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
  set_tests_properties(e2e_control_plane PROPERTIES LABELS e2e TIMEOUT 300 SKIP_REGULAR_EXPRESSION "^skipped:")
  foreach(counters store redis)
    add_test(NAME e2e_control_plane_postgres_${counters}
             COMMAND ${CMAKE_COMMAND} -E env PAGODA_E2E_STORE=postgres PAGODA_E2E_COUNTERS=${counters}
                     PAGODA_E2E_PG_PORT_FILE=${PROJECT_BINARY_DIR}/test-postgres/port
                     ${PAGODA_NODE} ${CMAKE_CURRENT_LIST_DIR}/control_plane.test.mjs
                     $<TARGET_FILE:pagoda_cli> ${PAGODA_TESTDATA_DIR}/stories260K.gguf
             WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR})
    set_tests_properties(e2e_control_plane_postgres_${counters} PROPERTIES LABELS e2e TIMEOUT 300
                         FIXTURES_REQUIRED postgres SKIP_REGULAR_EXPRESSION "^skipped:")
  endforeach()
  # Each starts its own servers on free ports; the soak wants the CPU to itself.
  set_tests_properties(e2e_soak PROPERTIES RUN_SERIAL TRUE)
  # Two servers and the 50-schema corpus at three seeds on each.
  set_tests_properties(e2e_structured_outputs PROPERTIES TIMEOUT 900)
endif()
