# The docs stand alone: relative links in README.md and docs/ resolve, and every alert that
# schedwatch_rulegen emits has its section in docs/runbook.md (the default runbook_url).
add_test(NAME docs_links
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/docs_test.py links
                 --source-dir ${CMAKE_SOURCE_DIR})
if(TARGET schedwatch_rulegen)
  add_test(NAME docs_runbook
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/docs_test.py runbook
                   --source-dir ${CMAKE_SOURCE_DIR} --rulegen $<TARGET_FILE:schedwatch_rulegen>)
endif()
