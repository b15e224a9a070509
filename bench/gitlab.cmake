# gitlab_page_bench: peak memory of one gitlab read given a hostile 16 MiB schedules page.
if(TARGET schedwatch_sources)
  add_executable(gitlab_page_bench ${CMAKE_SOURCE_DIR}/bench/gitlab_page_bench.cc)
  target_link_libraries(gitlab_page_bench PRIVATE schedwatch::sources)
endif()
