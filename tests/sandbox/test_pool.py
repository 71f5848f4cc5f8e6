import asyncio

import pytest

from sandbox.pool import WarmPool


class Factory:
    """Counts starts and discards so tests can see what the pool did."""

    def __init__(self, fail: bool = False) -> None:
        self.started: list[int] = []
        self.discarded: list[int] = []
        self.fail = fail

    async def start(self, key: str) -> int:
        await asyncio.sleep(0.01)
        if self.fail:
            raise RuntimeError("cannot start")
        self.started.append(len(self.started))
        return self.started[-1]

    async def discard(self, item: int) -> None:
        self.discarded.append(item)


async def test_size_zero_starts_each_item_on_demand() -> None:
    factory = Factory()
    pool = WarmPool(size=0, start=factory.start, discard=factory.discard)
    assert await pool.take("k") == 0
    assert pool.pending == 0


async def test_taking_an_item_starts_its_replacement() -> None:
    factory = Factory()
    pool = WarmPool(size=2, start=factory.start, discard=factory.discard)
    pool.fill("k")
    await asyncio.sleep(0.05)
    first = await pool.take("k")
    assert first == 0
    await asyncio.sleep(0.05)
    assert pool.pending == 2
    assert len(factory.started) == 3


async def test_items_are_never_handed_out_twice() -> None:
    factory = Factory()
    pool = WarmPool(size=2, start=factory.start, discard=factory.discard)
    pool.fill("k")
    taken = [await pool.take("k") for _ in range(5)]
    assert len(set(taken)) == 5
    await pool.close()


async def test_keys_do_not_share_items() -> None:
    factory = Factory()
    pool = WarmPool(size=1, start=factory.start, discard=factory.discard)
    pool.fill("a")
    await asyncio.sleep(0.05)
    await pool.take("b")
    assert pool.pending == 2  # a's item untouched, b's replacement started
    await pool.close()


async def test_close_discards_ready_items() -> None:
    factory = Factory()
    pool = WarmPool(size=2, start=factory.start, discard=factory.discard)
    pool.fill("k")
    await asyncio.sleep(0.05)
    await pool.close()
    assert sorted(factory.discarded) == sorted(factory.started) == [0, 1]


async def test_close_cancels_items_still_starting_and_leaks_none() -> None:
    factory = Factory()
    pool = WarmPool(size=2, start=factory.start, discard=factory.discard)
    pool.fill("k")
    await pool.close()
    assert factory.started == []  # cancelled before they finished starting
    pool.fill("k")
    assert pool.pending == 0


async def test_a_failed_warm_start_falls_back_to_one_on_demand_start() -> None:
    factory = Factory(fail=True)
    pool = WarmPool(size=1, start=factory.start, discard=factory.discard)
    pool.fill("k")
    with pytest.raises(RuntimeError, match="cannot start"):
        await pool.take("k")
    await pool.close()
