#!/usr/bin/env bash
# A current gVisor (runsc) on Debian 12, from Debian 13's archive, signed by Debian's own keys.
# Debian 12's runsc (2022-12-19) predates gVisor's systrap platform: it runs on ptrace, where
# every system call of the sandboxed program costs tens of microseconds: real suites ran 3-8x
# slower than bare, one threaded test 260x (bench/real_projects.py). Debian 13's runsc
# (2024-07-29) runs on systrap by default, where the same suites run at about 1-2x.
#
# What it changes, as root (a user is told the lines to run): one apt source for Debian 13
# (trixie) whose packages are pinned to priority 1, so nothing else is ever taken from it, and
# runsc alone pinned to 990. apt checks the release's signature against Debian's trixie key,
# which Debian 12's debian-archive-keyring already carries. Idempotent: run it again to
# follow trixie's runsc.
#   bash sandbox/runsc-current.sh [--check]   (--check: exit 1 when the runsc here is older)
set -euo pipefail
NEWEST_OLD=20230101  # runsc releases before this date have no systrap platform
version_date() { runsc --version 2>/dev/null | head -1 | grep -o '20[0-9]\{6\}' | head -1; }
have=$(command -v runsc >/dev/null && version_date || true)
if [ "${1:-}" = "--check" ]; then
  [ -n "$have" ] && [ "$have" -ge "$NEWEST_OLD" ]
  exit
fi
if [ -n "$have" ] && [ "$have" -ge "$NEWEST_OLD" ]; then
  echo "runsc $have has systrap: nothing to do"
  exit 0
fi
SOURCES=/etc/apt/sources.list.d/fixloop-trixie.sources
PREFS=/etc/apt/preferences.d/fixloop-trixie-runsc
KEYRING=/usr/share/keyrings/debian-archive-trixie-stable.gpg
if [ "$(id -u)" != 0 ]; then
  echo "a current runsc needs root: sudo bash $0" >&2
  exit 1
fi
[ -r "$KEYRING" ] || apt-get install -y -q debian-archive-keyring >/dev/null
cat >"$SOURCES" <<EOF
# fixloop: Debian 13's runsc only (see $PREFS)
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: $KEYRING
EOF
cat >"$PREFS" <<'EOF'
# fixloop: take runsc, and nothing else, from Debian 13 (trixie)
Package: *
Pin: release n=trixie
Pin-Priority: 1

Package: runsc
Pin: release n=trixie
Pin-Priority: 990
EOF
export DEBIAN_FRONTEND=noninteractive
apt-get update -q -o Dir::Etc::sourcelist="$SOURCES" -o Dir::Etc::sourceparts=- \
  -o APT::Get::List-Cleanup=0 >/dev/null
apt-get install -y -q runsc >/dev/null
echo "runsc $(version_date) installed from Debian 13"
