#!/usr/bin/env bash
# Docker Engine (dockerd) with gVisor (runsc) as its default runtime, for the docker
# backend (see docs/docker.md). Idempotent: safe to run again. Root only.
# CI: .ci/docker-service.sh; the tests read its socket from FIXLOOP_TEST_DOCKERD_URL.
#
# Everything here is fixloop's own and leaves a user's Docker alone (/var/run/docker.sock,
# /var/lib/docker, /etc/docker/daemon.json, the docker.service unit): its own
# daemon.json, socket, data root, exec root, pidfile and containerd namespace.
#   * runsc is the *default* runtime: the backend never asks for one (Podman ignores
#     docker-py's runtime=), so the engine's default is what runs the jobs.
#   * runsc gets --network=none: jobs have no network anyway, and runsc refuses to run
#     with networking in the root network namespace.
#   * No bridge, no iptables: the containers have no network, and the host's firewall
#     is not ours to change. cgroupfs: there may be no systemd to ask for cgroups.
#   * vfs storage: mounts nothing (overlay's leftover mounts are what broke Podman's
#     store here, see podman-service.sh), at the cost of a copy of the image per
#     container; fixloop's skeleton image is a few kilobytes.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # before any cd
if [ "$(id -u)" != 0 ]; then
  echo "fixloop's docker service runs as root: sudo bash $0" >&2
  exit 1
fi
SOCKET_DIR=/run/fixloop
SOCKET="$SOCKET_DIR/docker.sock"
PIDFILE="$SOCKET_DIR/docker.pid"
EXEC_ROOT="$SOCKET_DIR/docker-exec"
DATA_ROOT=/var/lib/fixloop/docker
CONF=/etc/fixloop/daemon.json
LOG=/var/log/fixloop-dockerd.log
PACKAGES="docker.io runsc"
export DEBIAN_FRONTEND=noninteractive
missing=$(for p in $PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done | xargs)
if [ -n "$missing" ]; then
  # Without recommends: docker.io's (needrestart, apparmor, git...) are not the engine.
  # Without systemd nothing starts Debian's own dockerd; with it, that one keeps
  # /var/run/docker.sock and never meets this one.
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $missing >/dev/null; }
fi
mkdir -p "$(dirname "$CONF")" "$(dirname "$LOG")" "$SOCKET_DIR" "$DATA_ROOT" "$EXEC_ROOT"
chmod 700 "$SOCKET_DIR"
cat >"$CONF.new" <<CONF
{
  "hosts": ["unix://$SOCKET"],
  "data-root": "$DATA_ROOT",
  "exec-root": "$EXEC_ROOT",
  "pidfile": "$PIDFILE",
  "containerd-namespace": "fixloop",
  "containerd-plugins-namespace": "fixloop-plugins",
  "runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}},
  "default-runtime": "runsc",
  "exec-opts": ["native.cgroupdriver=cgroupfs"],
  "iptables": false,
  "ip-masq": false,
  "bridge": "none",
  "storage-driver": "vfs"
}
CONF
mv -f "$CONF.new" "$CONF"

# answers PATH TIMEOUT
# shellcheck source=service-lib.sh
. "$HERE/service-lib.sh"

ours() {  # the pid in our pidfile is a dockerd started with our daemon.json
  [ -f "$PIDFILE" ] && tr '\0' ' ' 2>/dev/null <"/proc/$(cat "$PIDFILE")/cmdline" |
    grep -qF -- "dockerd --config-file $CONF"
}

# Ours, answering, reading its store, and running runsc by default: `docker info` asks
# all of that (with a timeout: a daemon stuck on its store must not hang CI).
healthy() {
  [ -S "$SOCKET" ] && ours && answers /_ping 2 &&
    [ "$(timeout 30 docker -H "unix://$SOCKET" info --format '{{.DefaultRuntime}}' 2>/dev/null)" = runsc ]
}

stop_ours() {
  if ours; then
    local pid
    pid=$(cat "$PIDFILE")
    kill "$pid" 2>/dev/null || true
    # dockerd stops its containers (10 s each at most) and its containerd first.
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$PIDFILE" "$SOCKET"
}

# dockerd reuses the containerd its exec root's pidfile names while that pid is alive. A
# containerd that died with a killed dockerd may stay a zombie where nothing reaps orphans
# (seen here): alive to dockerd, which then waits minutes for a socket that never comes.
clear_stale_containerd() {
  local pidfile="$EXEC_ROOT/containerd/containerd.pid"
  [ -f "$pidfile" ] || return 0
  tr '\0' ' ' 2>/dev/null <"/proc/$(cat "$pidfile")/cmdline" | grep -q "^containerd " ||
    rm -f "$pidfile"
}

start() {
  clear_stale_containerd
  # setsid: the daemon outlives this script and whatever session started it.
  setsid nohup dockerd --config-file "$CONF" >>"$LOG" 2>&1 </dev/null &
  local daemon=$! deadline=$((SECONDS + 60))
  while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$daemon" 2>/dev/null; do
    [ -S "$SOCKET" ] && answers /_ping 1 && break
    sleep 0.2
  done
  healthy
}

if healthy; then
  echo "fixloop's dockerd (runsc) answers at unix://$SOCKET"
  exit 0
fi
stop_ours
if start; then
  echo "fixloop's dockerd (runsc) answers at unix://$SOCKET"
  exit 0
fi
echo "dockerd did not come up on $SOCKET with $CONF; see $LOG" >&2
tail -n 5 "$LOG" >&2 || true
exit 1
