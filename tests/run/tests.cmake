# schedwatch_run: C++ tests of its pieces, the wrapper end to end (signals, exit codes, records,
# kill -9, the exporter reading the records), its Lease against the loopback API server, and
# real cron (+ rsyslog) with two wrapped entries of one role at -L 15 and at Debian's -L 1.
schedwatch_gtests(LIBRARY schedwatch::run LABELS unit SOURCES ${TESTS}/run/run_test.cc)
schedwatch_script_test(NAME run_wrapper_e2e LABELS integration TIMEOUT 120
  COMMAND ${TESTS}/run/run_wrapper_test.py --run ${RUN} --exporter ${EXPORTER})
schedwatch_script_test(NAME run_lease_e2e LABELS integration TIMEOUT 120
  COMMAND ${TESTS}/run/run_lease_test.py --run ${RUN})
foreach(level 15 1)
  # Its cron, /dev/log and /etc/cron.d are its own (as crontab_real_cron's).
  schedwatch_script_test(NAME run_real_cron_L${level} LABELS needs-root TIMEOUT 240 OWN_CRON_HOST
    COMMAND ${TESTS}/run/run_real_cron_test.py --run ${RUN} --exporter ${EXPORTER}
            --log-level ${level})
endforeach()
