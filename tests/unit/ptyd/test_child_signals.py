"""A program in an Orca terminal starts with every signal at its default, none blocked,
as in a terminal emulator or tmux, whatever the process that spawned it ignored.

Python ignores SIGPIPE (so did every terminal ptyd started: ``yes | head -1`` printed
"yes: standard output: Broken pipe" there), and an Orca started under ``nohup``
ignores SIGHUP (an agent's shell then outlived the hang-up that ends a terminal)."""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Iterator

import pytest

from actors.ptyd.spawn import spawn_on_pty

# grep reads its own status: what the spawn gave it (a shell would report its own
# mask, which dash changes while it waits for a child, as CI caught once).
STATUS = ["/bin/grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status"]
PIPE = ["/bin/sh", "-c", 'yes | head -1; echo "pipe:$?"']


def _run(argv: list[str]) -> str:
    pid, master = spawn_on_pty(argv, "/", {"PATH": "/usr/bin:/bin"}, 80, 24)
    out = b""
    try:
        while select.select([master], [], [], 10.0)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
        os.waitpid(pid, 0)
    return out.decode()


@pytest.fixture
def spawner_ignores_hup_and_blocks_usr1() -> Iterator[None]:
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, old)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _mask(out: str, field: str) -> int:
    line = next(ln for ln in out.splitlines() if ln.startswith(field))
    return int(line.split()[1], 16)


@pytest.mark.usefixtures("spawner_ignores_hup_and_blocks_usr1")
def test_the_terminals_program_ignores_and_blocks_nothing_its_spawner_did() -> None:
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # Python's own
    out = _run(STATUS)
    ignored, blocked = _mask(out, "SigIgn:"), _mask(out, "SigBlk:")
    for sig in (signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
        assert not ignored & (1 << (sig - 1)), f"{sig.name} ignored: {out}"
    assert blocked == 0, out
    # `yes` ends by SIGPIPE, quietly, as in any terminal
    out = _run(PIPE)
    assert "Broken pipe" not in out and "pipe:0" in out, out
