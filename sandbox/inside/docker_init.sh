# The first process of every docker-backend container (see sandbox/docker/containers.py).
# It reports the kernel the container sees (so fixloop can refuse a container
# that is not under gVisor), then runs "$@" (the zygote) with its output relayed
# through pipes inside the sandbox: the engine hands the container host pipes,
# to which this runsc returns short writes that unbuffered Python writers lose;
# cat keeps writing until everything is out.
read -r version < /proc/version
echo "FIXLOOP-KERNEL $version"
while read -r _ point kind options _; do
  if [ "$point" = / ]; then echo "FIXLOOP-ROOT $kind $options"; break; fi
done < /proc/self/mounts
out=/tmp/.fixloop-stdout
err=/tmp/.fixloop-stderr
mkfifo -m 600 "$out" "$err" || exit 125
cat "$out" & relay_out=$!
cat "$err" >&2 & relay_err=$!
"$@" >"$out" 2>"$err"
status=$?
# Processes the job left behind may hold the pipes open: give the relays a moment.
( sleep 2; kill $relay_out $relay_err 2>/dev/null ) &
wait $relay_out $relay_err
exit $status
