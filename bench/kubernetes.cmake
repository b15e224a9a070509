# kubernetes_bench: 10,000 CronJobs and 100,000 Jobs listed over TLS from the loopback API
# server and classified; prints time and peak memory. Run it from a RelWithDebInfo build.
if(TARGET schedwatch_exporter_lib)
  add_executable(kubernetes_bench ${CMAKE_SOURCE_DIR}/bench/kubernetes_bench.cc)
  target_link_libraries(kubernetes_bench PRIVATE schedwatch::exporter)
  schedwatch_bench_paths(kubernetes_bench)
endif()
