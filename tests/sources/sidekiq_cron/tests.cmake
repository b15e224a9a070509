# The sidekiq_cron source: its RESP reader and mapping on fixtures captured from Redis, the
# source against hostile loopback servers.
schedwatch_gtests(LIBRARY schedwatch::sources LABELS unit SOURCES
  sources/sidekiq_cron/sidekiq_cron_test.cc)
target_link_libraries(sidekiq_cron_test PRIVATE schedwatch::test_fixtures)
# End to end: redis-server, a real Sidekiq 6.4 with Sidekiq-cron 1.8 (app/), the exporter.
schedwatch_script_test(NAME sidekiq_cron_e2e LABELS integration TIMEOUT 600
  COMMAND ${TESTS}/sources/sidekiq_cron/sidekiq_cron_e2e_test.py --exporter ${EXPORTER})
