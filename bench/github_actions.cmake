# github_actions source: requests and time per refresh against a loopback fake GitHub API.
if(TARGET schedwatch_exporter_lib)
  add_executable(github_actions_bench ${CMAKE_SOURCE_DIR}/bench/github_actions_bench.cc)
  target_link_libraries(github_actions_bench PRIVATE schedwatch::exporter)
  schedwatch_bench_paths(github_actions_bench)
endif()
