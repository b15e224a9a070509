# The crontab source against the real cron daemon and rsyslog (needs root; fails otherwise). It
# starts cron and owns /dev/log for a while: nothing else may run beside it.
schedwatch_script_test(NAME crontab_real_cron LABELS needs-root TIMEOUT 300 SERIAL
  COMMAND ${TESTS}/sources/crontab/real_cron_test.py --exporter ${EXPORTER})
# discover on Debian's own crontabs: draft, check, merge, markers, then the exporter.
schedwatch_script_test(NAME crontab_discover LABELS integration
  COMMAND ${TESTS}/sources/crontab/discover_e2e_test.py --exporter ${EXPORTER})
# README's "Getting started on your own jobs" run as written on a stock Debian 12 host (cron logs
# only to the journal) booted with systemd-nspawn (needs root; the root is built once a day with
# mmdebstrap and reused, under /var/tmp).
schedwatch_script_test(NAME crontab_stock_host LABELS needs-root peer TIMEOUT 900 SERIAL
  COMMAND ${TESTS}/sources/crontab/stock_host_test.py --exporter ${EXPORTER})
