"""Issue 24 Must-show, on a real tree: ``orca term attach`` hands its terminal to ptyd.

(a) ``kill -9`` of ptyd while attached (orcad held with SIGSTOP, so the outage lasts
    until we let it end) gives the user's terminal back at once - out of the alternate
    screen and its modes (tmux's view of its pane), cooked again (``stty -a`` of the
    pane's tty) - and once orcad restarts ptyd the attach resumes by itself: the screen
    is drawn again and keys reach the agent, whose pid never changed;
(b) ``kill -9`` of the attaching client leaves ptyd (same pid) and the agent (running)
    unharmed, and a new attach in the same pane works.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import trio
from support.journey import User
from support.lifecycle import lifecycle
from support.tmux_pane import Tmux, needs_tmux, spawn_bare

from orca.contracts import supervisor

# The agent: the alternate screen with mouse, keypad modes and bracketed paste on (as in
# test_reattach), then ``cat`` (echoes what it reads).
AGENT = (
    r"printf '\033[?1049h\033[?1000h\033[?1006h\033=\033[?1h\033[?2004h\033[2J\033[H"
    r"\033[1;31mFULL\033[0mSCREEN-READY'; exec cat"
)
ATTACHED_MODES = "1 1 1 1 1 1"  # alternate screen, mouse, SGR mouse, keypad, cursor keys, cursor
USER_MODES = "0 0 0 0 0 1"


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    user = User(orca_home, tmp_path / "user")
    user.ok("up")
    try:
        yield user
    finally:
        user.ok("down", "--kill-terminals")


def _spawn(user: User, tmp_path: Path, argv: list[str]) -> str:
    return spawn_bare(user.paths, tmp_path, argv)


def _stty(tmux: Tmux) -> str:
    """``stty -a`` of the pane's terminal, read from outside it."""
    pane_tty = tmux.run("display", "-p", "#{pane_tty}")
    done = subprocess.run(
        ["stty", "-a", "-F", pane_tty], capture_output=True, text=True, check=True, timeout=10
    )
    return done.stdout


def _is_raw(stty: str) -> bool:
    words = stty.split()
    return "-icanon" in words and "-echo" in words


def _ptyd_pid(user: User) -> int:
    status = {a["name"]: a for a in user.json("status")["actors"]}
    return int(status["ptyd"]["pid"])


def _agent_pid(user: User, sid: str) -> int:
    [row] = [r for r in user.json("term", "ls")["sessions"] if r["sessionId"] == sid]
    assert row["running"]
    return int(row["pid"])


async def _attached(tmux: Tmux) -> None:
    """Until the attach drew the agent's screen with its modes (the snapshot's mode
    trailer ends with the keypad's ESC =)."""
    await tmux.wait_for(b"SCREEN-READY")
    await tmux.wait_for(b"\x1b=")
    assert tmux.modes() == ATTACHED_MODES
    assert _is_raw(_stty(tmux))


@needs_tmux
@pytest.mark.timeout(120)
async def test_kill_9_of_ptyd_restores_the_terminal_and_the_attach_resumes(
    user: User, tmp_path: Path
) -> None:
    """ptyd killed under an attached client: the pane is cooked and on its primary
    screen while ptyd is down; restarted, the attach draws the screen again by itself
    and keys reach the same agent."""
    sid = _spawn(user, tmp_path, ["/bin/sh", "-c", AGENT])
    agent = _agent_pid(user, sid)
    ptyd_pid = _ptyd_pid(user)
    orcad = int(json.loads(user.paths.lock_file.read_text())["pid"])
    tmux = Tmux(user.env, tmp_path / "pane.fifo")
    try:
        with trio.fail_after(90):
            async with lifecycle(user.orca_home) as (life, rec):
                tmux.type(f"{sys.executable} -m orca.cli.main term attach {sid}")
                await _attached(tmux)
                tmux.run("send-keys", "-l", "typed-before")
                await tmux.wait_for(b"typed-before")  # the agent's echo, through ptyd
                # A write to the user's terminal cut short by the kill, in a DCS string
                # (a sixel image, a capability query): tmux ignores CAN inside one, so a
                # restore that only began with CAN was swallowed and the pane stayed on
                # the alternate screen (CI). Written to the pane's tty as ptyd would.
                pane_tty = trio.Path(tmux.run("display", "-p", "#{pane_tty}"))
                await pane_tty.write_bytes(b"\x1bPq#0;2;0;0;0")
                await tmux.wait_for(b"\x1bPq#0;2;0;0;0")

                os.kill(orcad, signal.SIGSTOP)  # ptyd stays down until SIGCONT
                try:
                    os.kill(ptyd_pid, signal.SIGKILL)
                    await tmux.wait_for(b"ptyd went away")
                    # One look is enough: tmux parses what it read from the pane before
                    # its pipe-pane copy (what wait_for reads) leaves, and the client
                    # writes the restore before this message. It connects again only
                    # once the killed ptyd has exited: a ptyd in the middle of its exit
                    # still took connections, and the client's reconnect switched the
                    # pane back to the alternate screen (1 run in 20 under load).
                    assert tmux.modes() == USER_MODES  # primary screen, modes off
                    assert not _is_raw(_stty(tmux))  # cooked: the user can type again
                finally:
                    os.kill(orcad, signal.SIGCONT)
                await life.wait_until(
                    lambda m: rec.seen(supervisor.STARTED, "ptyd", lambda d: d.pid != ptyd_pid)
                )
                await _attached(tmux)  # the attach resumed by itself, the screen redrawn
                tmux.run("send-keys", "-l", "typed-after")
                await tmux.wait_for(b"typed-after")
                tmux.run("send-keys", "C-]")
                await tmux.wait_for(b"[detached]")
                assert tmux.modes() == USER_MODES
                assert not _is_raw(_stty(tmux))
    finally:
        tmux.close()
    assert _agent_pid(user, sid) == agent  # the agent lived through it, adopted


@needs_tmux
@pytest.mark.timeout(120)
async def test_kill_9_of_the_client_leaves_ptyd_and_the_agent_unharmed(
    user: User, tmp_path: Path
) -> None:
    """The attaching client killed: ptyd keeps its pid, the agent runs, and a new attach
    in the same pane shows the screen and takes keys."""
    sid = _spawn(user, tmp_path, ["/bin/sh", "-c", AGENT])
    agent = _agent_pid(user, sid)
    ptyd_pid = _ptyd_pid(user)
    attach = f"{sys.executable} -m orca.cli.main term attach {sid}"
    tmux = Tmux(user.env, tmp_path / "pane.fifo")
    try:
        with trio.fail_after(90):
            tmux.type(attach)
            await _attached(tmux)
            shell = psutil.Process(int(tmux.run("display", "-p", "#{pane_pid}")))
            [client] = [p for p in shell.children() if "attach" in p.cmdline()]
            client.kill()
            await trio.to_thread.run_sync(client.wait, 10)
            # The killed client left its terminal raw (nobody can restore it then, as
            # with tmux): the user types ``stty sane`` with Ctrl-J, then attaches again.
            tmux.run("send-keys", "-l", "stty sane; echo SANE-''AGAIN")
            tmux.run("send-keys", "C-j")
            await tmux.wait_for(b"SANE-AGAIN")
            assert _ptyd_pid(user) == ptyd_pid and _agent_pid(user, sid) == agent
            tmux.type(attach)
            await _attached(tmux)
            tmux.run("send-keys", "-l", "still-here")
            await tmux.wait_for(b"still-here")
            tmux.run("send-keys", "C-]")
            await tmux.wait_for(b"[detached]")
            assert tmux.modes() == USER_MODES
    finally:
        tmux.close()
    assert _ptyd_pid(user) == ptyd_pid and _agent_pid(user, sid) == agent
