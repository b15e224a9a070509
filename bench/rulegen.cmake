# schedwatch_rulegen: generation time for 10,000 roles (rulegen_bench) and rule evaluation in a
# real Prometheus over a real exporter (bench/rulegen_bench.py). Both print figures.
if(TARGET schedwatch_rulegen_lib)
  add_executable(rulegen_bench ${CMAKE_SOURCE_DIR}/bench/rulegen_bench.cc)
  target_link_libraries(rulegen_bench PRIVATE schedwatch::rulegen schedwatch::source_catalog)
endif()
