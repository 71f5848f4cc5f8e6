#!/usr/bin/env bash
# Podman's Docker-compatible API with gVisor (runsc) as its only runtime, for the
# docker backend (see README "Docker backend"). Idempotent: safe to run again.
#   podman 4.3 ignores docker-py's runtime=, so runsc is made the *default*
#   runtime, through a wrapper adding --network=none (runsc refuses to run with
#   networking in the root network namespace otherwise).
set -euo pipefail
SOCKET_DIR=/run/fixloop
SOCKET="$SOCKET_DIR/podman.sock"
export DEBIAN_FRONTEND=noninteractive
if ! command -v podman >/dev/null || ! command -v runsc >/dev/null; then
  apt-get install -y -q podman runsc >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q podman runsc >/dev/null; }
fi
cat >/usr/local/bin/runsc-nonet.new <<'WRAPPER'
#!/bin/sh
exec /usr/bin/runsc --network=none "$@"
WRAPPER
chmod 755 /usr/local/bin/runsc-nonet.new
mv -f /usr/local/bin/runsc-nonet.new /usr/local/bin/runsc-nonet
mkdir -p /etc/containers
cat >/etc/containers/containers.conf <<'CONF'
# Written by fixloop's .ci/podman-service.sh: gVisor is the only runtime.
[containers]
default_ulimits = ["nofile=20000:20000"]

[engine]
runtime = "runsc-nonet"
cgroup_manager = "cgroupfs"
events_logger = "file"

[engine.runtimes]
runsc-nonet = ["/usr/local/bin/runsc-nonet"]
CONF
mkdir -p "$SOCKET_DIR"
answers() {
  python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(sys.argv[1])' "$SOCKET" 2>/dev/null
}
if [ -S "$SOCKET" ] && answers; then
  exit 0
fi
rm -f "$SOCKET"
nohup podman system service --time=0 "unix://$SOCKET" >/var/log/fixloop-podman.log 2>&1 &
for _ in $(seq 50); do
  [ -S "$SOCKET" ] && answers && exit 0
  sleep 0.1
done
echo "podman system service did not create $SOCKET; see /var/log/fixloop-podman.log" >&2
exit 1
