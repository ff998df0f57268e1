#!/usr/bin/env bash
# The browser test drives Debian's chromium (Playwright cannot download its own
# browser here).  Run by `make test`: installs it when missing and we are root
# (as CI is); otherwise says why the browser test will be skipped.
set -u
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "make: chromium is not installed (as root: apt-get install -y chromium); the browser test will be skipped" >&2
    exit 0
fi
echo "make: installing Debian's chromium for the browser test" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null; }
command -v chromium >/dev/null 2>&1 || { echo "make: could not install chromium" >&2; exit 1; }
