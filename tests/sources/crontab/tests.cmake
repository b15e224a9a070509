# The crontab source against the real cron daemon and rsyslog (needs root; fails otherwise), in
# namespaces where that cron, /dev/log and /etc/cron.d are its own.
schedwatch_script_test(NAME crontab_real_cron LABELS needs-root TIMEOUT 300 OWN_CRON_HOST
  COMMAND ${TESTS}/sources/crontab/real_cron_test.py --exporter ${EXPORTER})
# discover on Debian's own crontabs: draft, check, merge, markers, then the exporter.
schedwatch_script_test(NAME crontab_discover LABELS integration
  COMMAND ${TESTS}/sources/crontab/discover_e2e_test.py --exporter ${EXPORTER})
# README's "Getting started on your own jobs" run as written on a stock Debian 12 host (cron logs
# only to the journal) booted with systemd-nspawn (needs root; the root is built once a day with
# mmdebstrap and reused, under /var/tmp). One nspawn container at a time: nspawn --keep-unit
# puts its payload and supervisor cgroups under ctest's cgroup, by those names.
schedwatch_script_test(NAME crontab_stock_host LABELS needs-root peer TIMEOUT 900
  RESOURCE_LOCK nspawn
  COMMAND ${TESTS}/sources/crontab/stock_host_test.py --exporter ${EXPORTER})
