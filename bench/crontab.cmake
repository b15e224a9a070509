# Cron log parsing and the crontab source's incremental refresh (prints figures).
add_executable(crontab_bench ${CMAKE_SOURCE_DIR}/bench/crontab_bench.cc)
target_link_libraries(crontab_bench PRIVATE schedwatch::exporter)
