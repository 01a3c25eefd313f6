"""What GNOME Files shows, read from its accessibility tree (AT-SPI), printed as JSON.

Run by Debian's own ``/usr/bin/python3`` (the one ``python3-pyatspi`` is installed
for), in the test's session bus (``DBUS_SESSION_BUS_ADDRESS``), by
``tests/desktop/desktop.py``. Prints one JSON object: ``{"windows": [...]}``, each
window ``{"title", "rows", "labels"}``: ``rows`` are the file view's rows (the texts of
a row's labels in order: its name first, then in a search its folder, size, date),
``labels`` every other text the window shows outside its sidebar (the floating bar's
"Searching…", a selection's status). Nothing is changed in the program.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pyatspi  # type: ignore[import-not-found]

#: the accessible names GTK 4 gives the list of a file view: the list view's (a list)
#: and the grid view's (a table)
VIEW_LISTS = frozenset({"GtkColumnListView", "GtkGridView"})


def _children(node: Any) -> list[Any]:
    found = []
    for i in range(node.childCount):
        try:
            child = node.getChildAtIndex(i)
        except Exception:  # a widget gone while it was read: the next probe sees
            continue
        if child is not None:
            found.append(child)
    return found


def _labels(node: Any) -> list[str]:
    """The texts of the labels in and under ``node``, in order."""
    texts = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.getRoleName() == "label" and current.name:
            texts.append(current.name)
        stack.extend(reversed(_children(current)))
    return texts


def _window(frame: Any) -> dict[str, Any]:
    rows: list[list[str]] = []
    labels: list[str] = []
    stack = [frame]
    while stack:
        node = stack.pop()
        role, name = node.getRoleName(), node.name
        if role == "list" and name == "Sidebar":
            continue
        if role in ("list", "table") and name in VIEW_LISTS:
            rows.extend(filter(None, (_labels(row) for row in _children(node))))
            continue
        if role == "label" and name:
            labels.append(name)
        stack.extend(reversed(_children(node)))
    return {"title": frame.name, "rows": rows, "labels": labels}


def main() -> int:
    windows = []
    for app in pyatspi.Registry.getDesktop(0):
        if app is None or app.name != "org.gnome.Nautilus":
            continue
        windows.extend(_window(frame) for frame in _children(app) if frame.getRoleName() == "frame")
    json.dump({"windows": windows}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
