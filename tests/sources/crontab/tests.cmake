# The crontab source against the real cron daemon and rsyslog (needs root; fails otherwise).
if(TARGET schedwatch_exporter)
  add_test(NAME crontab_real_cron
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/sources/crontab/real_cron_test.py
                   --exporter $<TARGET_FILE:schedwatch_exporter>)
  # It starts cron and owns /dev/log for a while: nothing else may run beside it.
  set_tests_properties(crontab_real_cron PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
endif()
