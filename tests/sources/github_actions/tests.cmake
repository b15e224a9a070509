# The github_actions source over real HTTP(S): the exporter binary against a loopback fake API.
add_test(NAME github_actions_e2e
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/sources/github_actions/github_e2e_test.py
                 --exporter $<TARGET_FILE:schedwatch_exporter>)
set_tests_properties(github_actions_e2e PROPERTIES TIMEOUT 180)
