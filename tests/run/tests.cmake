# schedwatch_run: C++ tests of its pieces, the wrapper end to end (signals, exit codes, records,
# kill -9, the exporter reading the records), its Lease against the loopback API server, and
# real cron (+ rsyslog) with two wrapped entries of one role at -L 15 and at Debian's -L 1.
if(TARGET schedwatch_run_lib)
  schedwatch_gtests(schedwatch::run ${CMAKE_CURRENT_SOURCE_DIR}/run/run_test.cc)
endif()
if(TARGET schedwatch_run AND TARGET schedwatch_exporter)
  add_test(NAME run_wrapper_e2e
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/run/run_wrapper_test.py
                   --run $<TARGET_FILE:schedwatch_run> --exporter $<TARGET_FILE:schedwatch_exporter>)
  set_tests_properties(run_wrapper_e2e PROPERTIES TIMEOUT 120)
  add_test(NAME run_lease_e2e
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/run/run_lease_test.py
                   --run $<TARGET_FILE:schedwatch_run>)
  set_tests_properties(run_lease_e2e PROPERTIES TIMEOUT 120)
  foreach(level 15 1)
    add_test(NAME run_real_cron_L${level}
             COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/run/run_real_cron_test.py
                     --run $<TARGET_FILE:schedwatch_run>
                     --exporter $<TARGET_FILE:schedwatch_exporter> --log-level ${level})
    # It starts cron and owns /dev/log: nothing else may run beside it (as crontab_real_cron).
    set_tests_properties(run_real_cron_L${level} PROPERTIES TIMEOUT 240 RUN_SERIAL TRUE)
  endforeach()
endif()
