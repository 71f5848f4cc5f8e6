#!/usr/bin/env bash
# Podman's Docker-compatible API with gVisor (runsc) as its only runtime, for the
# docker backend (see docs/docker.md). Idempotent: safe to run again.
# `fixloop-tui sandbox engine` runs it (CI: .ci/podman-service.sh).
#
# Everything here is fixloop's own and leaves any other Podman setup alone: its
# own containers.conf (CONTAINERS_CONF), its own storage (/var/lib/fixloop/podman)
# and a service on its own socket (/run/fixloop/podman.sock).
#   * podman 4.3 ignores docker-py's runtime=, so runsc is the *default* runtime,
#     through a wrapper adding --network=none (runsc refuses to run with
#     networking in the root network namespace otherwise).
#   * Overlay storage with overlay.skip_mount_home=true. Seen here with the
#     default overlay options: a container layer whose unmount had failed stayed
#     mounted *beneath* the overlay driver's private self-bind of its home
#     directory (a later podman process re-created that bind over it), so it could
#     no longer be unmounted by path and its directory could not be removed; every
#     podman call then spent ~10 s retrying `unlinkat .../merged: device or
#     resource busy` on that "incomplete layer" and failed (cf. podman issues
#     #16882, #17216). Without the self-bind a leftover mount stays reachable.
#     (vfs mounts nothing at all, but copies the whole image per container: ~7 s
#     for a 200 MB image from `sandbox build-image`, against 0.1 s with overlay.)
#   * The service must answer /_ping *and* read its store (/info) in time; if it
#     does not, it is restarted once over a repaired store (mounts left under it
#     unmounted, then `podman system reset` of fixloop's storage: it only holds
#     fixloop's images, which the backend re-imports on demand).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # before any cd
#
# As a user (not root) the same service runs rootless: the socket in
# $XDG_RUNTIME_DIR/fixloop (where `--sandbox auto` looks for it), config, storage and
# log under the home, and runsc with --ignore-cgroups (rootless Podman on cgroup v1
# cannot create cgroups; limits are then rlimits, see README "Security model").
# Missing packages are only named, with the sudo line that installs them.
PACKAGES="podman runsc python3"
if [ "$(id -u)" = 0 ]; then
  SOCKET_DIR=/run/fixloop
  LOG=/var/log/fixloop-podman.log
  CONF=/etc/fixloop/containers.conf
  STORAGE=/var/lib/fixloop/podman
  WRAPPER=/usr/local/bin/runsc-nonet
  RUNSC_FLAGS="--network=none"
  DRIVER=(--storage-driver overlay --storage-opt overlay.skip_mount_home=true)
else
  SOCKET_DIR="${XDG_RUNTIME_DIR:-/tmp/fixloop-$(id -u)}/fixloop"
  LOG="${XDG_CACHE_HOME:-$HOME/.cache}/fixloop/podman.log"
  CONF="${XDG_CONFIG_HOME:-$HOME/.config}/fixloop/containers.conf"
  STORAGE="${XDG_DATA_HOME:-$HOME/.local/share}/fixloop/podman"
  WRAPPER="${XDG_DATA_HOME:-$HOME/.local/share}/fixloop/runsc-nonet"
  RUNSC_FLAGS="--network=none --ignore-cgroups"
  DRIVER=(--storage-driver vfs)
  if command -v fuse-overlayfs >/dev/null && [ -r /dev/fuse ] && [ -w /dev/fuse ]; then
    DRIVER=(--storage-driver overlay --storage-opt overlay.mount_program="$(command -v fuse-overlayfs)")
  fi
  PACKAGES="$PACKAGES uidmap"
fi
SOCKET="$SOCKET_DIR/podman.sock"
PIDFILE="$SOCKET_DIR/podman.pid"
RUNROOT="$SOCKET_DIR/podman-run"
export DEBIAN_FRONTEND=noninteractive
missing=$(for p in $PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done | xargs)
if [ -n "$missing" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "fixloop's podman service needs system packages: sudo apt-get install -y $missing" >&2
    exit 1
  fi
  # shellcheck disable=SC2086
  apt-get install -y -q $missing >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q $missing >/dev/null; }
fi
mkdir -p "$(dirname "$WRAPPER")"
cat >"$WRAPPER.new" <<WRAPPER
#!/bin/sh
exec /usr/bin/runsc $RUNSC_FLAGS "\$@"
WRAPPER
chmod 755 "$WRAPPER.new"
mv -f "$WRAPPER.new" "$WRAPPER"
mkdir -p "$(dirname "$CONF")" "$(dirname "$LOG")" "$SOCKET_DIR" "$STORAGE"
chmod 700 "$SOCKET_DIR"
# The service and every conmon it starts keep this working directory, and conmon writes
# an empty `oom` file there when a container is OOM-killed: not the checkout it ran from.
cd "$SOCKET_DIR"
cat >"$CONF.new" <<CONF
# Written by fixloop's .ci/podman-service.sh for fixloop's own Podman service:
# gVisor is the only runtime.
[containers]
default_ulimits = ["nofile=20000:20000"]

[engine]
runtime = "runsc-nonet"
cgroup_manager = "cgroupfs"
events_logger = "file"

[engine.runtimes]
runsc-nonet = ["$WRAPPER"]
CONF
mv -f "$CONF.new" "$CONF"
export CONTAINERS_CONF="$CONF"
PODMAN=(podman --root "$STORAGE" --runroot "$RUNROOT" "${DRIVER[@]}")

# answers PATH TIMEOUT
# shellcheck source=service-lib.sh
. "$HERE/service-lib.sh"

# Our service, started with this script's storage, answering and reading its store.
healthy() {
  [ -S "$SOCKET" ] && [ -f "$PIDFILE" ] &&
    tr '\0' ' ' 2>/dev/null <"/proc/$(cat "$PIDFILE")/cmdline" | grep -qF -- "--root $STORAGE " &&
    answers /_ping 2 && answers /info 30
}

stop_ours() {
  if [ -f "$PIDFILE" ]; then
    local pid
    pid=$(cat "$PIDFILE")
    if [ -n "$pid" ] && tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "system service"; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
  fi
  rm -f "$SOCKET"
}

start() {
  nohup "${PODMAN[@]}" system service --time=0 "unix://$SOCKET" >>"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  for _ in $(seq 100); do
    [ -S "$SOCKET" ] && answers /_ping 1 && break
    sleep 0.1
  done
  answers /info 30
}

# Mounts under fixloop's storage, newest first: a newer mount may hide an older
# one at the same place, so unmount until none is left.
unmount_stale() {
  for _ in 1 2 3 4 5; do
    local points
    points=$(awk -v s="$STORAGE" -v r="$RUNROOT" 'index($5, s) == 1 || index($5, r) == 1 {print $1, $5}' \
      /proc/self/mountinfo | sort -rn | cut -d' ' -f2)
    [ -z "$points" ] && return 0
    for point in $points; do umount "$point" 2>/dev/null || umount -l "$point" 2>/dev/null || true; done
  done
}

answering() {
  echo "fixloop's podman service (runsc) answers at unix://$SOCKET"
}

if healthy; then
  answering
  exit 0
fi
stop_ours
if start; then
  answering
  exit 0
fi
echo "podman's store did not answer; repairing fixloop's storage ($STORAGE)" >&2
stop_ours
# Containers outlive the service (conmon keeps them): end them before their mounts go.
timeout 60 "${PODMAN[@]}" rm --all --force --time 0 >>"$LOG" 2>&1 || true
unmount_stale
timeout 120 "${PODMAN[@]}" system reset --force >>"$LOG" 2>&1 || true
unmount_stale
if start; then
  answering
  exit 0
fi
echo "podman system service did not come up on $SOCKET; see $LOG" >&2
# Podman records the runroot in its store: a user's runroot follows XDG_RUNTIME_DIR.
if tail -n 5 "$LOG" | grep -q "database configuration mismatch"; then
  echo "its storage $STORAGE was made with another XDG_RUNTIME_DIR: start it with that one" \
    "again, or remove the storage (podman unshare rm -rf $STORAGE) and start afresh" >&2
fi
exit 1
