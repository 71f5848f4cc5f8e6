#!/usr/bin/env bash
# fixloop's own Podman service with runsc; the script ships in the package as
# sandbox/docker/podman-service.sh (`fixloop-tui sandbox engine` runs it).
exec bash "$(dirname "$0")/../sandbox/docker/podman-service.sh" "$@"
