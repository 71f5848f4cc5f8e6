import asyncio

from sandbox.output import CappedStream


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
