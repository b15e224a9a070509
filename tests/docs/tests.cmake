# The docs stand alone: relative links in README.md and docs/ resolve, and every alert that
# schedwatch_rulegen emits has its section in docs/runbook.md (the default runbook_url).
schedwatch_script_test(NAME docs_links LABELS unit
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs_test.py links --source-dir ${CMAKE_SOURCE_DIR})
schedwatch_script_test(NAME docs_runbook LABELS integration
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs_test.py runbook --source-dir ${CMAKE_SOURCE_DIR}
          --rulegen ${RULEGEN})
# README's tour, top to bottom on a fresh clone of the repository (its own network namespace).
schedwatch_script_test(NAME docs_readme_tour LABELS integration needs-root
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/readme_tour_test.py --source-dir ${CMAKE_SOURCE_DIR}
          --build-dir ${CMAKE_BINARY_DIR})
