#!/usr/bin/env bash
# The documentation bench/known_item_bench.py indexes: real manuals from Debian
# packages, in many languages and scripts.  Run by that benchmark before it
# builds its page directories: installs, as root, the packages that are
# missing (only those); otherwise says which are missing and exits 1.
# Usage: bench/install-docs.sh PACKAGE...
set -u
missing=()
for package in "$@"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null)
    [ "$status" = installed ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "bench: missing documentation packages (as root: apt-get install -y --no-install-recommends ${missing[*]})" >&2
    exit 1
fi
echo "bench: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; } ||
    { echo "bench: could not install ${missing[*]}" >&2; exit 1; }
