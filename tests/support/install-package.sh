#!/usr/bin/env bash
# Installs a Debian package that some tests run (nginx, chromium, redis-server),
# when it is missing and we are root (as CI is); otherwise says why those tests
# will be skipped.  Run by `make test`:
#     tests/support/install-package.sh PACKAGE BINARY WHAT
# BINARY is the command or path that tells it is installed; WHAT names the tests.
# The package's own service is not started: a policy-rc.d that refuses it is in
# place during the installation when none is.
set -u
package=$1 binary=$2 what=$3
installed() { command -v "$binary" >/dev/null 2>&1 || [ -e "$binary" ]; }
installed && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "make: $package is not installed (as root: apt-get install -y $package); $what will be skipped" >&2
    exit 0
fi
echo "make: installing Debian's $package for $what" >&2
export DEBIAN_FRONTEND=noninteractive
if [ ! -e /usr/sbin/policy-rc.d ]; then
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
fi
apt-get install -y -q "$package" >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "$package" >/dev/null; }
installed || { echo "make: could not install $package" >&2; exit 1; }
