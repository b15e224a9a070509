# reconcile --apply killed at every step of a crontab repair (strace), on a full, a read-only
# and a size-limited file system (a tmpfs in a mount namespace of its own), then run again.
schedwatch_script_test(NAME reconcile_crash LABELS integration TIMEOUT 600
  COMMAND ${TESTS}/reconcile/reconcile_crash_test.py --exporter ${EXPORTER})
# Debian's cron refuses the file a kill between link and unlink left; the next reconcile
# finishes it and cron runs the job (cron in a mount namespace of its own: root, 2-3 minutes).
schedwatch_script_test(NAME reconcile_real_cron LABELS integration needs-root TIMEOUT 300
  COMMAND ${TESTS}/reconcile/reconcile_real_cron_test.py --exporter ${EXPORTER})
# A first run of reconcile --apply makes its missing state directory, or says the one command
# (a read-only tmpfs in a mount namespace of its own).
schedwatch_script_test(NAME reconcile_state_dir LABELS integration
  COMMAND ${TESTS}/reconcile/state_dir_test.py --exporter ${EXPORTER})
