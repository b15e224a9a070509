# sidekiq_cron_bench: one read of a sidekiq_cron source (bench/sidekiq_cron_bench.py drives it
# against 10,000 jobs in a loopback redis-server, beside Sidekiq::Cron::Job.all in Ruby).
if(TARGET schedwatch_sources)
  add_executable(sidekiq_cron_bench ${CMAKE_SOURCE_DIR}/bench/sidekiq_cron_bench.cc)
  target_link_libraries(sidekiq_cron_bench PRIVATE schedwatch::sources)
endif()
