"""Log lines: one per event, journald style under systemd, and an API trace under
``--debug`` that shows calls and durations but never credentials or session ids."""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD
from vaultfs.bridge.daemon.logs import (
    OneLineFormatter,
    setup_logging,
    stderr_is_journal,
    under_systemd,
)
from vaultfs.client import Credentials, VaultClient
from vaultfs.testing.vault_process import VaultProcess


def record(message: str, level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord("vaultfs.bridge.spool", level, __file__, 1, message, None, None)


def test_journal_lines_carry_the_priority_and_no_time() -> None:
    line = OneLineFormatter("%(name)s: %(message)s", journal=True).format(
        record("spool: doc 7 uploading failed")
    )
    assert line == "<4>vaultfs.bridge.spool: spool: doc 7 uploading failed"


def test_a_traceback_stays_on_the_records_line() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        failing = record("unexpected", logging.ERROR)
        failing.exc_info = sys.exc_info()
    line = OneLineFormatter("%(message)s", journal=False).format(failing)
    assert "\n" not in line and "RuntimeError: boom" in line


@pytest.mark.parametrize("variable", ["JOURNAL_STREAM", "INVOCATION_ID"])
def test_systemd_is_recognised(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.delenv("JOURNAL_STREAM", raising=False)
    monkeypatch.delenv("INVOCATION_ID", raising=False)
    assert not under_systemd()
    monkeypatch.setenv(variable, "8:1234")
    assert under_systemd()


def test_log_file_is_private_and_timestamped(tmp_path: Path) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        setup_logging("INFO", tmp_path / "logs" / "vaultfs.log")
        logging.getLogger("vaultfs.test").info("hello")
        for handler in root.handlers:
            handler.flush()
        text = (tmp_path / "logs" / "vaultfs.log").read_text()
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ INFO vaultfs.test: hello", text)
        assert (tmp_path / "logs" / "vaultfs.log").stat().st_mode & 0o777 == 0o600
    finally:
        for handler in root.handlers:
            handler.close()
        handlers, level = saved
        root.handlers[:] = handlers
        root.setLevel(level)


async def test_debug_traces_api_calls_without_secrets(
    vault_server: VaultProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="vaultfs.client.http")
    async with VaultClient(vault_server.url, Credentials(ADMIN, DEMO_PASSWORD)) as client:
        await client.login()
        await client.list_documents()
        session_id = client._http.session.id
    trace = [r.getMessage() for r in caplog.records if r.name == "vaultfs.client.http"]
    assert any(re.fullmatch(r"POST /auth -> 200 in \d+\.\d{3}s", line) for line in trace)
    assert any(line.startswith("GET /objects/documents -> 200 in ") for line in trace)
    assert session_id and all(session_id not in line for line in caplog.text.splitlines())
    assert DEMO_PASSWORD not in caplog.text


def test_stderr_is_the_journal_only_when_the_inode_matches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    st = os.fstat(2)
    monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")
    assert stderr_is_journal()
    monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino + 1}")
    assert not stderr_is_journal()
    monkeypatch.delenv("JOURNAL_STREAM")
    assert not stderr_is_journal()
