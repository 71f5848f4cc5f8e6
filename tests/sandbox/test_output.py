import asyncio
import signal

import pytest

from sandbox.output import CappedStream, await_job, exit_status


def test_short_output_is_kept_whole() -> None:
    stream = CappedStream(cap=100)
    stream.feed(b"hello\n")
    assert stream.text() == "hello\n"
    assert not stream.truncated


def test_long_output_keeps_head_and_tail_and_says_what_was_dropped() -> None:
    stream = CappedStream(cap=20)
    stream.feed(b"HEAD" + b"x" * 1000 + b"TAIL")
    text = stream.text()
    assert stream.truncated
    assert text.startswith("HEAD")
    assert text.endswith("TAIL")
    assert "dropped 988 bytes" in text


def test_memory_is_bounded_by_the_cap_whatever_the_input() -> None:
    stream = CappedStream(cap=1024)
    for _ in range(1000):
        stream.feed(b"y" * 4096)
    assert stream.total == 4096 * 1000
    assert len(stream.text().encode()) < 1024 + 100


def test_invalid_utf8_is_replaced_not_raised() -> None:
    stream = CappedStream(cap=100)
    stream.feed(b"ok \xff\xfe end")
    assert stream.text() == "ok \ufffd\ufffd end"


async def test_drain_reads_until_eof() -> None:
    reader = asyncio.StreamReader()
    reader.feed_data(b"a" * 200_000)
    reader.feed_eof()
    stream = CappedStream(cap=1000)
    await stream.drain(reader)
    assert stream.total == 200_000


@pytest.mark.parametrize(
    ("returncode", "timed_out", "expected"),
    [
        (0, False, 0),
        (3, False, 3),
        (-signal.SIGSEGV, False, 128 + signal.SIGSEGV),
        (-signal.SIGKILL, True, 124),  # killed at its timeout
        (None, True, 124),  # never reaped: killed
        (None, False, 128 + signal.SIGKILL),
        (2, True, 2),  # it ended on its own as the timeout struck
    ],
)
def test_exit_status_is_shell_style(returncode: int | None, timed_out: bool, expected: int) -> None:
    assert exit_status(returncode, timed_out) == expected


class FakeJob:
    def __init__(self) -> None:
        self.done = asyncio.Event()
        self.killed = 0

    async def wait(self) -> None:
        await self.done.wait()

    async def kill(self) -> None:
        self.killed += 1
        self.done.set()


async def test_a_job_past_its_timeout_is_killed_and_its_readers_end() -> None:
    job = FakeJob()
    reader = asyncio.create_task(asyncio.sleep(60))
    timed_out, duration_ms = await await_job(
        job.wait, job.kill, [reader], timeout_s=0.05, grace_s=0.05
    )
    assert timed_out
    assert 40 <= duration_ms < 5000
    assert job.killed == 1
    await asyncio.sleep(0)
    assert reader.cancelled()


async def test_a_cancelled_wait_still_kills_the_job() -> None:
    job = FakeJob()
    sent: list[str] = []

    async def send() -> None:
        sent.append("input")

    waiting = asyncio.create_task(
        await_job(job.wait, job.kill, [], timeout_s=60, grace_s=0.05, send=send)
    )
    await asyncio.sleep(0.05)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert sent == ["input"]
    assert job.killed == 1
