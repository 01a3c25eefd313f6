"""The walks' share of the vault's budget (``bridge.tree.walks``), on a clock of the
test's own: what a walk may spend, what it is refused, who is named."""

from __future__ import annotations

import errno
import os

import pytest
import trio

from vaultfs import errors
from vaultfs.bridge.daemon.notifications import notices
from vaultfs.bridge.tree.walks import WalkShare


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _spend(share: WalkShare, times: int, pid: int | None = None) -> int:
    """Spend ``times`` calls as the walk of ``pid`` (this process; 0: a process the
    kernel did not name); how many went through."""
    went = 0
    with share.listing(os.getpid() if pid is None else pid):
        for _ in range(times):
            try:
                share.spend("the details of document 1")
            except errors.WalkShareSpent:
                continue
            went += 1
    return went


def test_what_is_asked_for_directly_never_asks_the_share() -> None:
    share = WalkShare(per_day=2, burst=1, clock=_Clock())
    for _ in range(50):
        share.spend("the details of document 1")
    assert share.status()["spent"] == 0 and share.left() == 1
    # A lookup by a process that listed nothing is asked for directly too (``cat PATH``).
    with share.naming(os.getpid()):
        share.spend("version 0.1 of document 1")
    assert share.status()["spent"] == 0


def test_a_walk_spends_its_burst_then_is_refused_and_named() -> None:
    clock = _Clock()
    share = WalkShare(per_day=1000, burst=10, clock=clock)
    assert _spend(share, 25) == 10
    status = share.status()
    assert status["spent"] == 10 and status["refused"] == 15
    with open(f"/proc/{os.getpid()}/comm") as file:
        program = file.read().strip()
    assert status["programs"][0] == {
        "program": program,
        "pid": os.getpid(),
        "calls": 10,
        "refused": 15,
        "left": 0,
    }
    # Another program has a burst of its own (``ls versions/`` typed while find walks).
    assert status["left"] == 10 and _spend(share, 3, pid=0) == 3
    assert status["stopped"]["program"] == program and status["stopped"]["calls"] == 10
    # The refusal is a clear error of its own errno, naming the program and the options.
    with share.listing(os.getpid()), pytest.raises(errors.WalkShareSpent) as refused:
        share.spend("the details of document 7")
    assert errors.errno_for(refused.value) == errno.EDQUOT
    assert "document 7" in str(refused.value) and "walk_burst" in str(refused.value)
    # Once it listed, the same process's lookups are its walk's too.
    with share.naming(os.getpid()), pytest.raises(errors.WalkShareSpent):
        share.spend("version 0.1 of document 7")


def test_the_burst_comes_back_over_its_window_and_the_day_bounds_it() -> None:
    clock = _Clock()
    share = WalkShare(per_day=15, burst=10, clock=clock)
    assert _spend(share, 10) == 10
    clock.now += 30.0  # a tenth of the burst window: one call back
    assert _spend(share, 5) == 1
    clock.now += 300.0  # the burst is whole again, the day is not: 15 in all so far
    assert _spend(share, 10) == 4
    assert _spend(share, 5, pid=0) == 0  # the day is the mount's, whoever walks
    clock.now += 86_400.0
    assert _spend(share, 20) == 10


def test_a_stopped_walk_is_told_once_naming_the_program_and_the_search() -> None:
    share = WalkShare(per_day=100, burst=3, clock=_Clock())
    _spend(share, 10)
    status = {"mountpoint": "/mnt/vault", "walks": share.status()}
    told = [n for n in notices(status) if n.key[0] == "walk"]
    assert len(told) == 1
    (notice,) = told
    assert status["walks"]["stopped"]["program"] in notice.body
    assert "stopped it at 3 calls" in notice.body and "/mnt/vault/.search/" in notice.body
    assert not [n for n in notices({"walks": WalkShare().status()}) if n.key[0] == "walk"]


async def test_tasks_a_walk_starts_spend_its_share() -> None:
    """The read-ahead runs in tasks the walk's request started: trio copies the
    context, so they spend the walk's share and are refused as the walk is."""
    share = WalkShare(per_day=100, burst=1, clock=_Clock())
    outcomes: list[str] = []

    async def read_ahead() -> None:
        try:
            share.spend("the details of document 2")
            outcomes.append("spent")
        except errors.WalkShareSpent:
            outcomes.append("refused")

    async with trio.open_nursery() as nursery:
        with share.listing(os.getpid()):
            nursery.start_soon(read_ahead)
            nursery.start_soon(read_ahead)
        nursery.start_soon(read_ahead)  # started outside the walk: asked for directly
    assert sorted(outcomes) == ["refused", "spent", "spent"]
    assert share.status()["spent"] == 1
