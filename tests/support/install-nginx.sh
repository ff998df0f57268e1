#!/usr/bin/env bash
# The nginx tests run Debian's nginx with their own configuration (on 127.0.0.1,
# a free port; tests/support/nginxserver.py).  Run by `make test`: installs it
# when missing and we are root (as CI is); otherwise says why the nginx tests
# will be skipped.  The package's own service is not started: a policy-rc.d
# that refuses it is in place during the installation when none is.
set -u
command -v nginx >/dev/null 2>&1 && exit 0
[ -x /usr/sbin/nginx ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "make: nginx is not installed (as root: apt-get install -y nginx); the nginx tests will be skipped" >&2
    exit 0
fi
echo "make: installing Debian's nginx for the nginx tests" >&2
export DEBIAN_FRONTEND=noninteractive
if [ ! -e /usr/sbin/policy-rc.d ]; then
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
fi
apt-get install -y -q nginx >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q nginx >/dev/null; }
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || { echo "make: could not install nginx" >&2; exit 1; }
