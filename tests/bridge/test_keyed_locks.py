"""``tree.locks.KeyedLocks``: one task at a time per key, and no lock kept once free."""

from __future__ import annotations

import trio
import trio.testing

from vaultfs.bridge.tree.locks import Changes, KeyedLocks


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


async def test_a_change_since_a_waiter_looked_is_never_missed() -> None:
    changes = Changes()
    seen = changes.count
    changes.notify()  # while the waiter was looking
    with trio.fail_after(1):
        await changes.wait_since(seen)  # returns at once
    woken = []

    async def waiter() -> None:
        await changes.wait_since(changes.count)
        woken.append(True)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        assert woken == []  # parked until the next change
        changes.notify()
    assert woken == [True]
