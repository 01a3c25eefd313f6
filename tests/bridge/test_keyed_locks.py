"""``tree.locks.KeyedLocks``: one task at a time per key, and no lock kept once free."""

from __future__ import annotations

import trio
import trio.testing

from vaultfs.bridge.tree.locks import KeyedLocks


async def test_tasks_of_one_key_take_turns_and_the_lock_is_dropped_after() -> None:
    locks: KeyedLocks[int] = KeyedLocks()
    inside: list[int] = []
    most = 0
    release = trio.Event()

    async def hold(key: int) -> None:
        nonlocal most
        async with locks.hold(key):
            inside.append(key)
            most = max(most, inside.count(1))
            await release.wait()
            inside.remove(key)

    async with trio.open_nursery() as nursery:
        for key in (1, 1, 1, 2):
            nursery.start_soon(hold, key)
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(inside) == [1, 2]  # one task of key 1, and key 2 beside it
        assert len(locks) == 2
        release.set()
    assert most == 1
    assert len(locks) == 0  # every lock dropped once its last task let go


async def test_a_failing_body_drops_the_lock_too() -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    try:
        async with locks.hold("a"):
            raise ValueError("boom")
    except ValueError:
        pass
    assert len(locks) == 0
    async with locks.hold("a"):
        assert len(locks) == 1
