# Shared by fixloop's engine scripts (podman-service.sh, docker-service.sh), sourced after
# they set SOCKET.

# `answers PATH TIMEOUT`: the API on $SOCKET answers GET PATH with 200 within TIMEOUT seconds.
answers() {
  python3 - "$SOCKET" "$1" "$2" <<'PY' 2>/dev/null
import socket, sys
path, what, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.settimeout(timeout)
s.connect(path)
s.sendall(f"GET {what} HTTP/1.0\r\nHost: d\r\n\r\n".encode())
head = s.recv(64)
sys.exit(0 if head.startswith((b"HTTP/1.0 200", b"HTTP/1.1 200")) else 1)
PY
}
