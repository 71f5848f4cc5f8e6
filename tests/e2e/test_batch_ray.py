"""`fixloop-tui batch --ray` on a real local Ray cluster: a head (no CPUs: it runs no task)
and two worker nodes of one CPU each, started once for the module. The command joins it as a
user's would, without the model's key: the workers read theirs from their own environment.

Held to the local batch's results (test_batch.py), to a worker node killed mid-batch (the
task is retried on the other one, and says so), to a task whose worker dies on every attempt
(`error` with the cause, not a hang), and `bench --ray` to a local bench's tables."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from ray.cluster_utils import Cluster

from tests.e2e.batch_runs import (
    ENDINGS,
    FOUR_TASKS,
    KEY,
    batch,
    gathered,
    same_work,
    script_four,
    write_batch,
)
from tests.e2e.conftest import BatchHere
from tests.e2e.test_bench import bench, code
from tests.model_server import ScriptedModelServer, held, reply
from tests.projects import EXAMPLES, MEAN_FIX, TOP_FIX, answer, committed_copy

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("needs_gvisor")]

MIB = 1024 * 1024
NODE = {"num_cpus": 1, "object_store_memory": 100 * MIB}
# A node that stops answering is declared dead in ~3 s instead of Ray's default ~15 s.
HEALTH = {
    "health_check_initial_delay_ms": 1000,
    "health_check_period_ms": 1000,
    "health_check_failure_threshold": 3,
}
FIX_BOTH = answer("fix both", MEAN_FIX, TOP_FIX)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """Head and two workers; every Ray process it started is gone when the module ends."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_DISABLE_USAGE_STATS", "1")
        env.setenv("OPENAI_API_KEY", KEY)  # the nodes' environment, never the command's
        started = time.monotonic()
        ray_cluster = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 0,
                "include_dashboard": False,
                "object_store_memory": 100 * MIB,
                "_system_config": HEALTH,
            },
        )
        session = ray_cluster.head_node.get_session_dir_path()
        try:
            for _ in range(2):
                ray_cluster.add_node(**NODE)
            print(f"ray cluster up in {time.monotonic() - started:.1f} s")
            yield ray_cluster
        finally:
            ray_cluster.shutdown()
            assert_no_ray_process_left(session)
            shutil.rmtree(session, ignore_errors=True)  # its logs: a few MB a module


def assert_no_ray_process_left(session: str) -> None:
    name = Path(session).name
    deadline = time.monotonic() + 20
    while left := [p for p in psutil.process_iter(["cmdline"]) if _of_session(p, name)]:
        if time.monotonic() > deadline:
            for process in left:
                process.kill()
            pytest.fail(f"Ray processes outlived the cluster: {[p.pid for p in left]}")
        time.sleep(0.5)


def _of_session(process: psutil.Process, session: str) -> bool:
    try:
        return process.pid != os.getpid() and any(session in a for a in process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def worker_ids(cluster: Cluster) -> set[str]:
    return {node.node_id for node in cluster.worker_nodes}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return committed_copy(EXAMPLES / "textstats", tmp_path / "repos", "the buggy example")


def test_a_ray_batch_ends_as_the_same_batch_run_here(
    cluster: Cluster,
    model_server: ScriptedModelServer,
    four_tasks_here: BatchHere,
    tmp_path: Path,
) -> None:
    """The same file, the same repository and answers as the batch run here."""
    script_four(model_server)
    out = tmp_path / "ray"
    on_ray, whole = batch(
        model_server, four_tasks_here.tasks, out, "--ray", cluster.address, key=False
    )
    assert on_ray.returncode == four_tasks_here.done.returncode == 1, on_ray.stderr
    assert {t["id"]: t["status"] for t in whole["tasks"]} == ENDINGS
    ids = list(FOUR_TASKS)
    assert same_work(out, ids) == same_work(four_tasks_here.out, ids)
    for task in whole["tasks"]:
        (attempt,) = task["attempts"]
        assert attempt["node"] in worker_ids(cluster)  # never the head: it has no CPU
        assert not attempt["lost"]


def test_a_worker_node_killed_mid_batch_loses_no_task(
    cluster: Cluster, model_server: ScriptedModelServer, project: Path, tmp_path: Path
) -> None:
    """Both nodes busy (each task's first answer held), one node killed with its worker: its
    task runs again on the other node, and its result names both attempts."""
    release = threading.Event()
    for key in ("[left]", "[right]"):
        model_server.route(key, held(reply(FIX_BOTH), release), reply(FIX_BOTH))
    lines = {key: {"task": f"Make the tests pass [{key}]"} for key in ("left", "right")}
    tasks = write_batch(tmp_path / "tasks.jsonl", project, lines)
    victim = next(iter(cluster.worker_nodes))
    killed: dict[str, str] = {}

    def kill_when_both_wait() -> None:
        asking = wait_for(lambda: _asking(model_server, ("[left]", "[right]")))
        raylet = victim.all_processes["raylet"][0].process.pid
        for key, process in asking.items():
            if process.ppid() == raylet:  # the task running on the victim node
                killed[key.strip("[]")] = victim.node_id
                cluster.remove_node(victim, allow_graceful=False)
                process.kill()  # a lost machine loses its processes too
        release.set()

    killer = threading.Thread(target=kill_when_both_wait)
    killer.start()
    try:
        done, whole = batch(
            model_server, tasks, tmp_path / "out", "--ray", cluster.address, key=False
        )
    finally:
        release.set()
        killer.join()
        if len(cluster.worker_nodes) < 2:
            cluster.add_node(**NODE)  # the module's cluster stays as it was promised
    assert done.returncode == 0, done.stderr
    assert len(killed) == 1, "no task was running on the killed node"
    ((lost_task, lost_node),) = killed.items()
    outcomes = {t["id"]: t for t in whole["tasks"]}
    assert {id_: o["status"] for id_, o in outcomes.items()} == {"left": "ok", "right": "ok"}
    first, second = outcomes[lost_task]["attempts"]
    assert (first["node"], first["lost"]) == (lost_node, True)
    assert second["node"] != lost_node
    assert not second["lost"]
    assert whole["summary"]["retried"] == 1
    assert "retried after 1 lost attempt" in done.stderr
    assert len(gathered(tmp_path / "out", lost_task)["commits"]) == 2  # the fix and the baseline


def test_a_task_whose_worker_dies_on_every_attempt_ends_error_with_the_cause(
    cluster: Cluster, model_server: ScriptedModelServer, project: Path, tmp_path: Path
) -> None:
    never = threading.Event()  # its answers never come: its worker is killed while it waits
    model_server.route("[doomed]", held(reply(FIX_BOTH), never), held(reply(FIX_BOTH), never))
    model_server.route("[fine]", reply(FIX_BOTH))
    lines = {key: {"task": f"Make the tests pass [{key}]"} for key in ("doomed", "fine")}
    tasks = write_batch(tmp_path / "tasks.jsonl", project, lines)
    stop = threading.Event()

    def kill_every_asker() -> None:
        seen: set[int] = set()
        while not stop.is_set():
            for request in model_server.routed("[doomed]"):
                if request.client_port not in seen:
                    seen.add(request.client_port)
                    wait_for(lambda port=request.client_port: _process_on(port)).kill()
            time.sleep(0.2)

    killer = threading.Thread(target=kill_every_asker)
    killer.start()
    try:
        started = time.monotonic()
        done, whole = batch(
            model_server,
            tasks,
            tmp_path / "out",
            "--ray",
            cluster.address,
            "--max-retries",
            "1",
            key=False,
        )
        took = time.monotonic() - started
    finally:
        stop.set()
        killer.join()
    assert done.returncode == 1, done.stderr
    outcomes = {t["id"]: t for t in whole["tasks"]}
    assert outcomes["fine"]["status"] == "ok"
    doomed = outcomes["doomed"]
    assert doomed["status"] == "error"
    assert "attempted 2 times" in doomed["reason"]
    assert "Worker" in doomed["reason"] or "died" in doomed["reason"], doomed["reason"]
    assert [a["lost"] for a in doomed["attempts"]] == [True, True]
    assert "doomed: error" in done.stderr
    assert "lost on every attempt (2)" in done.stderr
    assert len(model_server.routed("[doomed]")) == 2
    assert took < 300


def test_bench_on_ray_prints_the_tables_and_plot_of_a_local_bench(
    cluster: Cluster, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    """test_bench.py's suite and answers (its `today` arm): the same rows a local bench
    prints, with each run on a worker node."""
    model_server.route("function `add`", code("return a - b"), code("return a + b"))
    model_server.route("function `negate`", code("return -x", "negate", "x"))
    plot = tmp_path / "bench.png"
    done = bench(
        model_server,
        tmp_path,
        *("--arms", "today", "--max-iters", "1", "--plot", str(plot), "--ray", cluster.address),
        key=None,  # no key: the nodes have theirs
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    for row in [
        ["tasks", "2"],
        ["pass@1", "(round", "0)", "50.0%"],
        ["pass", "after", "round", "1", "100.0%"],
        ["model", "calls", "3"],
        ["prompt", "tokens", "per", "fix", "150"],
        ["t/1", "r1"],
        ["t/2", "r0"],
    ]:
        assert row in rows, f"{row} not in the table:\n{done.stdout}"
    assert "  runs ended: ok 2" in done.stdout
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "  t/1 [today] round 0: failing (0 passed, 2 failed)" in done.stderr
    assert "2/2 t/" in done.stderr  # the bar, per finished task
    assert (len(model_server.routed("function `add`")), model_server.count) == (2, 3)


def test_a_cluster_that_does_not_answer_is_one_error_at_once(
    model_server: ScriptedModelServer, project: Path, tmp_path: Path
) -> None:
    with socket.socket() as unused:  # a port where nothing listens
        unused.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{unused.getsockname()[1]}"
    tasks = write_batch(tmp_path / "tasks.jsonl", project, {"t": {}})
    started = time.monotonic()
    done, _ = batch(model_server, tasks, tmp_path / "out", "--ray", address, key=False)
    assert done.returncode == 6
    assert f"no Ray cluster answers at {address}" in done.stderr
    assert time.monotonic() - started < 30  # Ray itself would retry it for minutes


def wait_for(found: Callable[[], Any], timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := found()):
        if time.monotonic() > deadline:
            raise AssertionError("waited 120 s in vain")
        time.sleep(0.1)
    return value


def _asking(server: ScriptedModelServer, keys: tuple[str, ...]) -> dict[str, psutil.Process]:
    """The process behind each route's first request, once every route has asked."""
    firsts = {key: server.routed(key)[:1] for key in keys}
    if not all(firsts.values()):
        return {}
    processes = {key: _process_on(requests[0].client_port) for key, requests in firsts.items()}
    return processes if all(processes.values()) else {}  # type: ignore[return-value]


def _process_on(port: int) -> psutil.Process | None:
    """The local process whose TCP connection has `port` as its own end."""
    for connection in psutil.net_connections(kind="tcp"):
        mine = connection.laddr and connection.laddr.port == port
        if mine and connection.pid and connection.pid != os.getpid():
            return psutil.Process(connection.pid)
    return None
