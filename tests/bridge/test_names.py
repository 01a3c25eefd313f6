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


def test_a_literal_name_that_looks_disambiguated_is_escaped() -> None:
    siblings = [
        Sibling("X [2]", "1", (1, "")),
        Sibling("X", "0", (0, "")),
        Sibling("X", "2", (2, "")),
    ]
    assert assign_names(siblings) == ["X %5B2]", "X", "X [2]"]


def test_a_literal_suffix_can_never_take_a_disambiguated_path() -> None:
    """Two "Meeting Notes" (ids 1 and 3), then a document named "Meeting Notes [3]"."""
    siblings = [Sibling("Meeting Notes", "1", (1, "")), Sibling("Meeting Notes", "3", (3, ""))]
    before = assign_names(siblings)
    assert before == ["Meeting Notes", "Meeting Notes [3]"]
    after = assign_names([*siblings, Sibling("Meeting Notes [3]", "9", (9, ""))])
    assert after[:2] == before  # nothing moved
    assert after[2] == "Meeting Notes %5B3]" and unescape(after[2]) == "Meeting Notes [3]"
    files = assign_names([Sibling("scan [2].pdf", "5", is_file=True)])
    assert files == ["scan %5B2].pdf"]
    assert escape("Report [draft] v2") == "Report [draft] v2"  # brackets mid-name stay


def test_control_characters_never_reach_a_terminal() -> None:
    assert escape("evil\x1b[2Jname\n\x7f") == "evil%1B[2Jname%0A%7F"
    assert unescape(escape("evil\x1b[2Jname\n\x7f")) == "evil\x1b[2Jname\n\x7f"
