# reconcile --apply killed at every step of a crontab repair (strace), on a full, a read-only
# and a size-limited file system (a tmpfs in a mount namespace of its own), then run again.
schedwatch_script_test(NAME reconcile_crash LABELS integration TIMEOUT 600
  COMMAND ${TESTS}/reconcile/reconcile_crash_test.py --exporter ${EXPORTER})
