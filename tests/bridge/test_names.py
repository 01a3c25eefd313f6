"""Names: escaping round-trips, hostile names stay inside the mount, stable disambiguation."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vaultfs.bridge.tree.filenames import MAX_NAME_BYTES, Sibling, assign_names, escape, unescape


def _safe(name: str) -> bool:
    return (
        "/" not in name
        and "\0" not in name
        and name not in ("", ".", "..")
        and len(name.encode()) <= MAX_NAME_BYTES
    )


@given(st.text())
def test_escape_round_trips_and_is_a_valid_name(label: str) -> None:
    name = escape(label)
    assert unescape(name) == label
    assert "/" not in name and "\0" not in name and name not in ("", ".", "..")


@given(st.text(), st.text())
def test_escape_is_injective(a: str, b: str) -> None:
    if a != b:
        assert escape(a) != escape(b)


def test_readable_names_stay_as_they_are() -> None:
    assert escape("Q3 report 50% off.docx") == "Q3 report 50% off.docx"
    assert escape("a/b") == "a%2Fb"
    assert escape("100%2F") == "100%252F"
    assert escape("..") == "%2E%2E"
    assert escape(".") == "%2E"
    assert escape("nul\0byte") == "nul%00byte"


def test_hostile_names_from_a_server_never_leave_the_directory() -> None:
    hostile = ["..", ".", "../../etc/passwd", "/", "", "\0", "a" * 300, "é" * 200 + ".pdf"]
    names = assign_names([Sibling(h, str(i), (i, "")) for i, h in enumerate(hostile)])
    assert len(set(names)) == len(hostile)
    assert all(_safe(n) for n in names), names


def test_long_names_are_cut_uniquely_and_keep_their_extension() -> None:
    a, b = "x" * 300 + "a.pdf", "x" * 300 + "b.pdf"
    names = assign_names([Sibling(a, "1", is_file=True), Sibling(b, "2", is_file=True)])
    assert names[0] != names[1]
    assert all(len(n.encode()) <= MAX_NAME_BYTES and n.endswith(".pdf") for n in names)


def test_duplicates_get_the_id_and_the_oldest_keeps_the_plain_name() -> None:
    siblings = [Sibling("Report", "7", (7, "")), Sibling("Report", "3", (3, ""))]
    assert assign_names(siblings) == ["Report [7]", "Report"]
    # Order of the input does not matter, and a newer duplicate renames nothing.
    assert assign_names(siblings[::-1]) == ["Report", "Report [7]"]
    more = [*siblings, Sibling("Report", "9", (9, ""))]
    assert assign_names(more) == ["Report [7]", "Report", "Report [9]"]


def test_file_duplicates_keep_the_extension_and_reserved_names_are_avoided() -> None:
    files = [
        Sibling("a.pdf", "1", (1, ""), is_file=True),
        Sibling("a.pdf", "2", (2, ""), is_file=True),
    ]
    assert assign_names(files) == ["a.pdf", "a [2].pdf"]
    assert assign_names([Sibling("versions", "5", is_file=True)], reserved={"versions"}) == [
        "versions [5]"
    ]


def test_a_literal_name_that_looks_disambiguated_keeps_its_name() -> None:
    siblings = [
        Sibling("X [2]", "1", (1, "")),
        Sibling("X", "0", (0, "")),
        Sibling("X", "2", (2, "")),
    ]
    names = assign_names(siblings)
    assert names[0] == "X [2]" and names[1] == "X"
    assert len(set(names)) == 3
