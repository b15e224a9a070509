# The docs stand alone: relative links in README.md and docs/ resolve, and every alert that
# schedwatch_rulegen emits has its section in docs/runbook.md (the default runbook_url).
schedwatch_script_test(NAME docs_links LABELS unit
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs_test.py links --source-dir ${CMAKE_SOURCE_DIR})
schedwatch_script_test(NAME docs_runbook LABELS integration
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs_test.py runbook --source-dir ${CMAKE_SOURCE_DIR}
          --rulegen ${RULEGEN})
