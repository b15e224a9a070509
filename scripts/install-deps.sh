#!/bin/sh
# Installs what schedwatch needs to build and test, from Debian 12's packages only.
#   scripts/install-deps.sh                    to build
#   scripts/install-deps.sh with-test-tools    and to run every test (scripts/test)
#   scripts/install-deps.sh with-fuzz          and to build and run the fuzzers (scripts/fuzz)
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
BUILD="build-essential cmake ninja-build pkg-config git libyaml-dev prometheus-cpp-dev
  libyaml-cpp-dev libfmt-dev libgtest-dev libgmock-dev libcurl4-openssl-dev nlohmann-json3-dev
  libcli11-dev libhowardhinnant-date-dev zlib1g-dev libcrypt-dev tzdata ca-certificates curl
  libmicrohttpd-dev libgnutls28-dev dpkg-dev help2man libsystemd-dev ccache"
# The celery_beat source reads PostgreSQL (libpq) and SQLite.
BUILD="$BUILD libpq-dev libsqlite3-dev"
TEST="python3 python3-croniter python3-yaml prometheus prometheus-alertmanager
  prometheus-node-exporter systemd-journal-remote
  prometheus-pushgateway cron rsyslog openssl chromium mmdebstrap lintian buildah iproute2"
# systemd-nspawn boots the Debian root the systemd source is tested against.
TEST="$TEST systemd-container"
# systemd-socket-activate (package systemd) passes the socket in the socket_activation test.
TEST="$TEST systemd"
# slowhttptest: the slow clients of bench/http_hostile_bench.py and bench/soak_bench.py.
TEST="$TEST slowhttptest"
# libfaketime steps the exporter's clock in the clock_step test.
TEST="$TEST faketime"
# fugit is GitLab's cron parser: the fugit_oracle test's judge.
TEST="$TEST ruby-fugit"
# jsonnet renders the generated and static mixins (rulegen_mixin, rulegen_conventions).
TEST="$TEST jsonnet"
# strace kills reconcile at each step of a write (reconcile_crash); unshare (util-linux, always
# there) gives it a tmpfs of its own.
TEST="$TEST strace"
# Celery and django-celery-beat are the celery_oracle test's judge; celery_beat_e2e runs them with
# django-celery-results on PostgreSQL 15 and Redis.
TEST="$TEST python3-celery python3-django python3-django-celery-beat python3-django-celery-results"
TEST="$TEST python3-psycopg2 python3-redis postgresql redis-server"
# The sidekiq_cron source speaks RESP with hiredis; its end-to-end test runs redis-server and a
# real Sidekiq 6.4 with Sidekiq-cron 1.8.
BUILD="$BUILD libhiredis-dev"
TEST="$TEST ruby-sidekiq ruby-sidekiq-cron ruby-redis"
# libFuzzer comes with clang's runtime libraries.
FUZZ="clang-14 libclang-rt-14-dev"
wanted="$BUILD"
for argument in "$@"; do
  case "$argument" in
    with-test-tools) wanted="$wanted $TEST" ;;
    with-fuzz) wanted="$wanted $FUZZ" ;;
    *) echo "install-deps.sh: unknown argument $argument" >&2; exit 2 ;;
  esac
done
missing=""
for package in $wanted; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $package"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  $SUDO apt-get update -q
  # Services must not start on install: the tests start their own, on loopback. A policy the
  # machine already has is left as it is.
  own_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    own_policy=yes
  fi
  $SUDO apt-get install -y -q --no-install-recommends $missing
  [ -z "$own_policy" ] || $SUDO rm -f /usr/sbin/policy-rc.d
fi
