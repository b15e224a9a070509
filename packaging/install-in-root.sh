#!/bin/sh
# Installs the schedwatch Debian package into the Debian 12 root this runs in: a container image
# being built (Dockerfile) or a fresh chroot (tests/package/package_test.py). apt resolves the
# package's Depends from the Debian archive in the root's sources; no service is started; apt's
# lists and downloaded archives are removed afterwards.
#   install-in-root.sh /path/to/schedwatch_<version>_<arch>.deb [more Debian packages]
set -eu
deb=$1
shift
case "$deb" in
  /*) ;;
  *) deb="./$deb" ;;  # apt takes a local file only as a path
esac
export DEBIAN_FRONTEND=noninteractive
# No daemon may start in a root without its init (the package's postinst asks for a start where
# systemd runs); a policy the root already has is left as it is.
own_policy=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  own_policy=yes
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "$deb" "$@"
[ -z "$own_policy" ] || rm -f /usr/sbin/policy-rc.d
apt-get clean
rm -rf /var/lib/apt/lists/*
schedwatch_exporter --version
