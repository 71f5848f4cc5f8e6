"""A Ray cluster on this one machine, for measuring what worker nodes buy (`bench --ray`,
`batch --ray`) without more machines: a head that runs no task (no CPUs) and N worker nodes
of `--cpus` each, as the Ray tests start it (ray.cluster_utils). It prints the address to
give `--ray`, then waits; ctrl+c (or SIGTERM) stops every process it started.

    python -m bench.local_ray_cluster [--workers 2] [--cpus 1]
    fixloop-tui bench --suite examples --arms today --ray ADDRESS   # in another shell

The nodes read their environment (model keys, FIXLOOP_*) from this shell.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time

MIB = 1024 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="worker nodes (default 2)")
    parser.add_argument("--cpus", type=float, default=1.0, help="CPUs per worker (default 1)")
    args = parser.parse_args()
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    from ray.cluster_utils import Cluster

    # A background job ignores ctrl+c's SIGINT: `kill PID` (SIGTERM) stops the cluster too.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.monotonic()
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "include_dashboard": False,
            "object_store_memory": 200 * MIB,
        },
    )
    try:
        for _ in range(args.workers):
            cluster.add_node(num_cpus=args.cpus, object_store_memory=200 * MIB)
        print(
            f"ray cluster: head and {args.workers} worker node(s) of {args.cpus:g} CPU up in "
            f"{time.monotonic() - started:.1f} s; --ray {cluster.address}",
            flush=True,
        )
        threading.Event().wait()  # until ctrl+c
    except KeyboardInterrupt:
        pass
    finally:
        cluster.shutdown()
        print("ray cluster: stopped", flush=True)


if __name__ == "__main__":
    main()
