# The gitlab source: its mapping and GitLabSource over an in-process transport, then the exporter
# binary against a loopback fake GitLab API over HTTPS.
schedwatch_gtests(LIBRARY schedwatch::sources LABELS unit SOURCES
  sources/gitlab/gitlab_source_test.cc)
target_link_libraries(gitlab_source_test PRIVATE schedwatch::test_fixtures)
schedwatch_script_test(NAME gitlab_e2e LABELS integration TIMEOUT 120
  COMMAND ${TESTS}/sources/gitlab/gitlab_e2e_test.py --exporter ${EXPORTER})
# discover: every pipeline schedule over TLS; the draft, the descriptions to set, merging.
schedwatch_script_test(NAME gitlab_discover LABELS integration
  COMMAND ${TESTS}/sources/gitlab/discover_gitlab_test.py --exporter ${EXPORTER})
# GitLab's cron dialect, pure (core with the catalog, as the spec reads it).
schedwatch_gtests(LIBRARY schedwatch::source_catalog LABELS unit SOURCES
  sources/gitlab/gitlab_cron_test.cc)
