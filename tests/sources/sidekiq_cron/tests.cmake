# The sidekiq_cron source: its RESP reader and mapping on fixtures captured from Redis, the
# source against hostile loopback servers.
schedwatch_gtests(LIBRARY schedwatch::sources LABELS unit SOURCES
  sources/sidekiq_cron/sidekiq_cron_test.cc)
