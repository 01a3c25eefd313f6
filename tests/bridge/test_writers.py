"""The take of a file's content is decided in the order the kernel sent the requests:
a release takes its file's lock at once when it is free (``Writers.taken``)."""

from __future__ import annotations

import trio

from vaultfs.bridge.write.writers import Writers


async def test_a_free_lock_is_taken_before_any_other_task_runs() -> None:
    writers = Writers()
    ran: list[str] = []

    async def later_request() -> None:
        ran.append("later request")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later_request)
        async with writers.taken():
            # A checkpoint here would have let the later request run first.
            assert ran == []
            assert writers.lock.locked()
    assert ran == ["later request"]
    assert not writers.lock.locked()


async def test_a_held_lock_is_waited_for() -> None:
    writers = Writers()
    order: list[str] = []

    async def holder(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with writers.lock:
            task_status.started()
            await trio.sleep(0.01)
            order.append("holder done")

    async with trio.open_nursery() as nursery:
        await nursery.start(holder)
        async with writers.taken():
            order.append("taken")
    assert order == ["holder done", "taken"]
