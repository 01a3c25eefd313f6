"""The result of a run: one row per figure, rendered as a markdown table and file."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .sizes import MiB

__all__ = ["Aim", "Report", "Row", "seconds", "throughput"]


@dataclass(frozen=True)
class Aim:
    """``ratio >= 0.9`` or ``ratio <= 2``."""

    at_least: bool
    value: float

    def __str__(self) -> str:
        return f"{'≥' if self.at_least else '≤'} {self.value:g}"

    def met(self, ratio: float) -> bool:
        compare: Callable[[float, float], bool] = operator.ge if self.at_least else operator.le
        return compare(ratio, self.value)


@dataclass
class Row:
    workload: str
    vaultfs: str
    reference: str
    #: the figure the aim is about (a ratio, or MiB / calls per 200 documents)
    ratio: float | None
    aim: Aim | None
    api_calls: str = ""

    @property
    def met(self) -> str:
        if self.aim is None or self.ratio is None:
            return ""
        return "yes" if self.aim.met(self.ratio) else "**no**"


def seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def throughput(size: int, value: float) -> str:
    return f"{seconds(value)} ({size / MiB / value:.0f} MiB/s)"


@dataclass
class Report:
    machine: dict[str, str]
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def table(self) -> str:
        lines = [
            "| workload | vaultfs | reference | ratio | aim | met | API calls |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in self.rows:
            ratio = "" if row.ratio is None else f"{row.ratio:.2f}"
            lines.append(
                f"| {row.workload} | {row.vaultfs} | {row.reference} | {ratio} "
                f"| {row.aim or ''} | {row.met} | {row.api_calls} |"
            )
        return "\n".join(lines)

    def markdown(self) -> str:
        machine = "\n".join(f"- {name}: {value}" for name, value in self.machine.items())
        notes = "\n".join(f"- {note}" for note in self.notes)
        return (
            f"# vaultfs benchmark, {self.machine['date']}, {self.machine['host']}\n\n"
            f"{machine}\n\n{self.table()}\n\nNotes:\n\n{notes}\n"
        )

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.markdown())
