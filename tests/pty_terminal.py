"""A real terminal for CLI tests: ``kbdesk`` run in a child process on a pseudo-terminal.

    with Terminal("chat") as term:
        term.expect("> ")
        term.send("How do backups work?\\r")
        term.expect("nightly")
        term.send("\\x03")          # Ctrl-C: the kernel sends SIGINT to the child
        assert term.wait() == 0

Built on the standard library (``pty``, ``select``); what the child writes is kept in
``output`` (escape sequences and all), ``expect`` looks for text after the last match.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

WAIT = 60.0
"""Generous bound on any wait: a slow machine must not fail a test."""


class Terminal:
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.argv = [sys.executable, "-m", "kbdesk.cli.main", *args]
        self.env = {**os.environ, "TERM": "xterm", "COLUMNS": "160", "LINES": "40", **(env or {})}
        self.output = ""
        self.position = 0
        self.status: int | None = None

    def __enter__(self) -> Terminal:
        pid, fd = pty.fork()
        if pid == 0:  # the child: its stdin, stdout and stderr are the terminal
            try:
                os.execvpe(self.argv[0], self.argv, self.env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def interrupt(self, until: str) -> None:
        """Ctrl-C, again until ``until`` appears. CPython's ``input()`` notices a SIGINT
        only when it interrupts readline's select(): one that lands while readline handles
        a keystroke waits for the next key. No person types Ctrl-C that fast after a key;
        a test does, so a Ctrl-C that went unseen is sent again."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            self.send("\x03")
            try:
                self.expect(until, timeout=2.0)
                return
            except AssertionError:
                continue
        raise AssertionError(f"{until!r} did not appear after Ctrl-C:\n{self.output[self.position :]!r}")

    def expect(self, text: str, timeout: float = WAIT) -> str:
        """Wait until ``text`` appears after the previous match; returns what came before it."""
        deadline = time.monotonic() + timeout
        while (found := self.output.find(text, self.position)) < 0:
            if not self._read(deadline - time.monotonic()):
                raise AssertionError(f"{text!r} did not appear; the terminal shows:\n{self.output[self.position :]!r}")
        before = self.output[self.position : found]
        self.position = found + len(text)
        return before

    def wait(self, timeout: float = WAIT) -> int:
        """The child's exit status (reading its last output meanwhile)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                while self._read(0.2):
                    pass
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            self._read(0.1)
        raise AssertionError(f"kbdesk did not exit; the terminal shows:\n{self.output[self.position :]!r}")

    def _read(self, timeout: float) -> bool:
        if timeout <= 0:
            return False
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.output += data.decode("utf-8", "replace")
        return bool(data)
