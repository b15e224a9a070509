#!/bin/sh
# own_cron_host.sh COMMAND...: runs COMMAND as the only cron host there is, so that tests of the
# real cron daemon run beside each other and beside the rest of the suite (root). It enters new
# mount and PID namespaces, where /run, /dev (so /dev/log, which the test's rsyslogd takes),
# /etc/cron.d and the crontab spool are empty tmpfs and /etc/crontab an empty file, and where the
# test's cron is the only one. This shell stays PID 1 there (no exec): it reaps what cron's jobs
# leave behind, and its end ends every process of the namespace.
set -eu
if [ "${OWN_CRON_HOST:-}" != inside ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "own_cron_host.sh: must run as root: it mounts and starts cron (CI runs as root)" >&2
    exit 1
  fi
  OWN_CRON_HOST=inside exec unshare --mount --pid --fork --kill-child --mount-proc \
    --propagation private "$0" "$@"
fi
mount -t tmpfs -o mode=0755 own-run /run
mkdir /run/host-dev
mount --rbind /dev /run/host-dev
mount -t tmpfs -o mode=0755 own-dev /dev
for node in null zero full random urandom tty; do
  touch "/dev/$node"
  mount --bind "/run/host-dev/$node" "/dev/$node"
done
umount -R -l /run/host-dev
rmdir /run/host-dev
mkdir -m 1777 /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s fd/0 /dev/stdin
ln -s fd/1 /dev/stdout
ln -s fd/2 /dev/stderr
# Without cron installed these are missing: the test itself says what to install.
if [ -d /etc/cron.d ] && [ -d /var/spool/cron/crontabs ] && getent group crontab >/dev/null; then
  mount -t tmpfs -o mode=0755 own-cron.d /etc/cron.d
  mount -t tmpfs -o "mode=1730,gid=$(getent group crontab | cut -d: -f3)" own-spool \
    /var/spool/cron/crontabs
  : >/run/crontab
  mount --bind /run/crontab /etc/crontab
fi
"$@"
