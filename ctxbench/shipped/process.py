"""A running driver: one subprocess in a release's environment, spoken to line by line.

A driver that exits, prints something that is not the protocol, or takes longer than the
per-request timeout is killed and raises :class:`DriverError` with the tail of its stderr; the
cell becomes an error row and the sweep goes on. Processes are pooled per worker process and
reused across the cells (traces) a worker replays: starting a framework costs seconds.
"""

from __future__ import annotations

import atexit
import collections
import os
import queue
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ctxbench.errors import CtxbenchError
from ctxbench.shipped.environment import Environment
from ctxbench.shipped.protocol import ProtocolError, decode_line, dumps

#: seconds a driver may take for one request (``start`` included); the environment variable
#: ``CTXBENCH_SHIPPED_TIMEOUT`` overrides it (tests of the hang path set it low)
DEFAULT_TIMEOUT = 120.0
TIMEOUT_ENV_VAR = "CTXBENCH_SHIPPED_TIMEOUT"
STDERR_TAIL_LINES = 20

DRIVERS_DIR = Path(__file__).parent / "drivers"


class DriverError(CtxbenchError, RuntimeError):
    """The driver crashed, hung or broke the protocol; the message ends with its stderr tail.
    ctxbench's own error (not a plug-in's), whichever strategy class drove the driver."""


def request_timeout() -> float:
    raw = os.environ.get(TIMEOUT_ENV_VAR)
    return float(raw) if raw else DEFAULT_TIMEOUT


class DriverProcess:
    """One driver subprocess with a reader thread per pipe (so reads can time out)."""

    def __init__(self, command: list[str], program: Path, env: Mapping[str, str]) -> None:
        self.program = program
        self._proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=str(program.parent),
        )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            self._lines.put(raw)
        self._lines.put(None)

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for raw in self._proc.stderr:
            self._stderr.append(raw.decode("utf-8", "replace").rstrip("\n"))

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def send(self, payload: Mapping[str, Any]) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(dumps(payload).encode("utf-8", "surrogatepass"))
            self._proc.stdin.flush()
        except OSError as exc:
            raise self._failure(f"the driver stopped reading ({exc})") from None

    def receive(self) -> dict[str, Any]:
        try:
            raw = self._lines.get(timeout=request_timeout())
        except queue.Empty:
            raise self._failure(
                f"the driver did not answer within {request_timeout():g} s"
            ) from None
        if raw is None:
            self._proc.wait()
            raise self._failure(f"the driver exited with code {self._proc.returncode}")
        try:
            reply = decode_line(raw.decode("utf-8", "replace"))
        except ProtocolError as exc:
            raise self._failure(str(exc)) from None
        if reply["op"] == "error":
            raise self._failure(f"the driver failed: {reply.get('message', '')}")
        return reply

    def exchange(
        self,
        payload: Mapping[str, Any],
        answer: Callable[[dict[str, Any]], Mapping[str, Any]],
        final: str,
    ) -> dict[str, Any]:
        """Send a request and serve the driver's own requests (``answer``) until ``final``."""
        self.send(payload)
        while True:
            reply = self.receive()
            if reply["op"] == final:
                return reply
            self.send(answer(reply))

    def _failure(self, what: str) -> DriverError:
        self.kill()
        self._stderr_reader.join(timeout=5)  # the pipe closed: read what the driver last said
        tail = self.stderr_tail()
        return DriverError(
            f"{self.program.name}: {what}" + (f"; stderr tail:\n{tail}" if tail else "")
        )

    def kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        _POOL.pop(self._key(), None)

    def _key(self) -> tuple[str, str]:
        return (str(self._proc.args[0]), str(self.program))  # type: ignore[index]


_POOL: dict[tuple[str, str], DriverProcess] = {}


def acquire(env: Environment, program: Path) -> DriverProcess:
    """The pooled driver for ``program`` in ``env``, started when absent or dead."""
    command = env.command(program)
    key = (command[0], str(program))
    proc = _POOL.get(key)
    if proc is None or not proc.alive:
        proc = DriverProcess(command, program, env.process_env())
        _POOL[key] = proc
    return proc


def shutdown() -> None:
    """Stop every pooled driver (at exit, and between tests that need fresh ones)."""
    for proc in list(_POOL.values()):
        proc.kill()
    _POOL.clear()


atexit.register(shutdown)
