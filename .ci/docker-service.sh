#!/usr/bin/env bash
# fixloop's own Docker Engine (dockerd) with runsc, on its own socket; the script ships in the
# package as sandbox/docker/docker-service.sh. CI's tests run the docker backend against it
# (FIXLOOP_TEST_DOCKERD_URL) as well as against Podman.
exec bash "$(dirname "$0")/../sandbox/docker/docker-service.sh" "$@"
