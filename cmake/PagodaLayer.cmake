# pagoda_layer(NAME DIR DEPS...): one static library per source folder.
# Sources are globbed so adding a file never needs a CMake edit. Files named
# *_avx512.cc / *_avx2.cc get the ISA flags for run-time dispatch; nothing else
# is compiled with ISA flags, so the binary runs on any x86-64.
set(PAGODA_AVX512_FLAGS -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni -mavx512bf16 -mavx2 -mfma -mf16c -mbmi2)
set(PAGODA_AVX2_FLAGS -mavx2 -mfma -mf16c -mbmi2)

function(pagoda_layer name dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*.cc)
  # GPU backends (kernels/cuda) are targets of their own, built only when enabled.
  list(FILTER srcs EXCLUDE REGEX "/cuda/")
  if(NOT srcs)
    # Header-only for now.
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${name} INTERFACE ${ARGN})
    return()
  endif()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  foreach(src ${srcs})
    if(src MATCHES "_avx512\\.cc$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${PAGODA_AVX512_FLAGS}")
    elseif(src MATCHES "_avx2\\.cc$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${PAGODA_AVX2_FLAGS}")
    endif()
  endforeach()
  target_link_libraries(${name} PUBLIC ${ARGN})
endfunction()
