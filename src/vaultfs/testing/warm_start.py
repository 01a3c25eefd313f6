"""Warm starts of ``vaultfs serve`` and ``vaultfs mount``: each process forked from
one that imported the command's stack once.

A server's start takes about 2 s of CPU before it answers, two thirds of it importing
its stack (Starlette, SQLAlchemy, Alembic, Hypercorn, trio); a mount's 0.8 s, most of
it importing the daemon's (trio, httpx, pyfuse3). The suite starts a few hundred of
each on two cores. Here one process per command and test process (``python -m
vaultfs.testing.warm_start serve``, or ``mount``, started at the first warm start of
that command) imports that command's stack, and no other's, then forks a child for
each start asked for. The child runs what ``python -m vaultfs ARGS`` runs
(``vaultfs.cli.main``) with the arguments, environment, working directory and output
file of that start: the same code in a process of its own, only its imports done
already. (Its ``/proc/PID/cmdline`` is the forking process's: a test of what a command
line shows starts its process cold.)

``start_command`` is how the process helpers start a command: warm where
``WARM_STARTS`` is "1" in the environment (the suite sets it) and the command is this
interpreter's ``serve`` or ``mount``, else in a new interpreter.

``ForkedProcess`` stands for such a child as ``subprocess.Popen`` does for one's own:
its pid, ``poll``, ``wait`` (with ``subprocess.TimeoutExpired``), ``send_signal``,
``kill``. It follows the child through a pidfd (signals never reach a later process
that got its number), and asks the forking process, the child's parent, for its exit
status.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any, Literal, NoReturn

__all__ = ["WARM_STARTS", "ChildProcess", "Command", "ForkedProcess", "start", "start_command"]

#: the environment variable that makes ``start_command`` fork when "1"
WARM_STARTS = "VAULTFS_WARM_STARTS"
#: the commands started warm
Command = Literal["serve", "mount"]


class ForkedProcess:
    """A server or a mount forked by a warm-start process: what ``subprocess.Popen``
    offers."""

    def __init__(self, forks: _Forks, pid: int) -> None:
        self._forks = forks
        self.pid = pid
        self.args = ["vaultfs", forks.command]
        self.returncode: int | None = None
        # Taken at once: the number is the child's until the forking process reaps it,
        # which it does only once the child has exited.
        self._pidfd = os.pidfd_open(pid)

    def poll(self) -> int | None:
        if self.returncode is None and _readable(self._pidfd, 0):
            self.returncode = self._forks.exit_code(self.pid)
            os.close(self._pidfd)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None and not _readable(self._pidfd, timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        code = self.poll()
        assert code is not None
        return code

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # exited: ``poll`` says how
                signal.pidfd_send_signal(self._pidfd, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def _readable(fd: int, timeout: float | None) -> bool:
    return bool(select.select([fd], [], [], timeout)[0])


class _Forks:
    """The test process's end of the warm-start process: one request and its answer at
    a time (a JSON line each way)."""

    def __init__(self, command: Command) -> None:
        self.command = command
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", __name__, self.command],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(json.dumps(request).encode() + b"\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the warm-start process ended")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def start(self, argv: list[str], env: dict[str, str], output: Path) -> ForkedProcess:
        answer = self._ask({"argv": argv, "env": env, "output": str(output), "cwd": os.getcwd()})
        return ForkedProcess(self, int(answer["pid"]))

    def exit_code(self, pid: int) -> int:
        return int(self._ask({"exit_code": pid})["code"])


_forks: dict[str, _Forks] = {}

#: a command started by ``start_command``
ChildProcess = subprocess.Popen[bytes] | ForkedProcess


def start_command(
    argv: list[str], env: dict[str, str], output: Path, *, python: Path | None = None
) -> ChildProcess:
    """``python -m vaultfs ARGV`` with ``env`` as its whole environment, no input, its
    output appended to ``output``: forked warm (``start``) where ``WARM_STARTS`` says so
    and it is this interpreter's ``serve`` or ``mount``, else by ``python`` (this
    interpreter by default) anew."""
    if python is None and os.environ.get(WARM_STARTS) == "1" and argv[0] in ("serve", "mount"):
        return start(argv, env, output)
    with open(output, "ab") as out:  # the child has its own copy of the descriptor
        return subprocess.Popen(
            [str(python or sys.executable), "-m", "vaultfs", *argv],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def start(argv: list[str], env: dict[str, str], output: Path) -> ForkedProcess:
    """``vaultfs ARGV`` (``serve`` or ``mount``) in a child of that command's warm-start
    process, with ``env`` as its whole environment and its output appended to ``output``."""
    command: Command = "serve" if argv[0] == "serve" else "mount"
    assert argv[0] == command, argv[0]
    forks = _forks.get(command)
    if forks is None:
        forks = _forks[command] = _Forks(command)
    return forks.start(argv, env, output)


# --- the warm-start process --------------------------------------------------------


def _serve_forks(command: str, requests: IO[bytes], answers: IO[bytes]) -> None:
    # The whole of what the command's start imports, once (and nothing of the other's:
    # a mount daemon carries none of the server's stack).
    import vaultfs.cli

    if command == "serve":
        import hypercorn.trio  # noqa: F401

        import vaultfs.server.app
    else:
        import vaultfs.bridge.daemon.mount  # noqa: F401

    for line in requests:
        request = json.loads(line)
        if "exit_code" in request:
            # Asked once the child has exited (its pidfd said so): reaped at once.
            try:
                code = os.waitstatus_to_exitcode(os.waitpid(int(request["exit_code"]), 0)[1])
            except ChildProcessError:  # not a child of this process: its status is lost
                code = 1
            answer = {"code": code}
        else:
            pid = os.fork()
            if pid == 0:
                _run_child(request)
            answer = {"pid": pid}
        answers.write(json.dumps(answer).encode() + b"\n")
        answers.flush()


def _run_child(request: dict[str, Any]) -> NoReturn:
    """In the forked child: become ``vaultfs ARGV`` as ``subprocess.Popen`` would have
    started it, run it, exit with its code."""
    code = 1
    try:
        log = os.open(request["output"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        # The request pipes were 0 and 1: the child holds neither end of them.
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        sys.argv = ["vaultfs", *request["argv"]]
        from vaultfs.cli import main

        code = main(list(request["argv"]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    _serve_forks(sys.argv[1], sys.stdin.buffer, sys.stdout.buffer)
