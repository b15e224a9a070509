# The github_actions source over real HTTP(S): the exporter binary against a loopback fake API.
schedwatch_script_test(NAME github_actions_e2e LABELS integration TIMEOUT 180
  COMMAND ${TESTS}/sources/github_actions/github_e2e_test.py --exporter ${EXPORTER})
# discover: every scheduled workflow over TLS; the draft, marker lines, merging.
schedwatch_script_test(NAME github_actions_discover LABELS integration
  COMMAND ${TESTS}/sources/github_actions/discover_github_test.py --exporter ${EXPORTER})
