"""Issue 14 Must-show, on a real tree (``orca up`` in a fresh ORCA_HOME):

(a) Ctrl-] while the program is in the alternate screen with mouse reporting, keypad
    modes and bracketed paste on gives the user's terminal back - checked in a real
    tmux pane (tmux's own view of its pane's modes), and the shell is on screen again;
(b) after ``kill -9`` of ptyd under orcad, ``term.attach`` of the adopted session
    reproduces the exact screen: the model rebuilt from the attach snapshot equals one
    that watched the stream from the start (cells, attributes, cursor, modes, title);
(c) attach draws in an outer alternate screen and leaves it on detach, so the tmux
    pane shows again what the shell showed before the attach.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.actors import EventTap, actor_tap
from support.dirwatch import until_names
from support.journey import User
from support.lifecycle import lifecycle
from support.tmux_pane import Tmux, needs_tmux, spawn_bare

from actors.ptyd.history import MODEL_SUFFIX
from actors.ptyd.terminal_model import TerminalModel
from orca.actor import RpcClient, open_rpc_client
from orca.contracts import ptyd, supervisor
from orca.contracts import sys as sys_contract

COLS, ROWS = 80, 24
# Enters the alternate screen with SGR mouse, application keypad + cursor keys and
# bracketed paste on, draws, and waits.
FULLSCREEN = (
    r"printf '\033[?1049h\033[?1000h\033[?1006h\033=\033[?1h\033[?2004h\033[2J\033[H"
    r"\033[1;31mFULL\033[0mSCREEN-READY'; exec sleep 600"
)
# Draws in two parts (a checkpoint is taken in the idle time between them, so the
# rebuild is checkpoint + journal tail): colours, a title, a scroll region, the cursor
# parked, then the alternate screen with a status line and bracketed paste on.
DRAW = r"""
import sys
w = sys.stdout.write
w('\x1b]2;reattach-title\x07')
for i in range(60):
    w(f'\x1b[38;5;{i % 200}mlog line {i}\x1b[0m \x1b[1;4mbold\x1b[0m\r\n')
w('PART-ONE\r\n'); sys.stdout.flush()
sys.stdin.readline()
w('\x1b[?1049h\x1b[2J\x1b[H\x1b[44;97m top bar \x1b[0m\x1b[5;10H\x1b[7mselected\x1b[0m')
w('\x1b[24;1H\x1b[48;2;10;20;30mstatus: ok\x1b[0m\x1b[?2004h\x1b[3;3HPART-TWO')
w('\x1b[12;40H'); sys.stdout.flush()
import time; time.sleep(600)
"""


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


async def _attach_and_detach_in_tmux(user: User, tmp_path: Path) -> str:
    """Attach in a tmux pane to a full-screen program, Ctrl-], check tmux's view of its
    pane's modes before and after; returns the pane's screen after the detach."""
    sid = _spawn(user, tmp_path, ["/bin/sh", "-c", FULLSCREEN])
    tmux = Tmux(user.env, tmp_path / "pane.fifo")
    try:
        with trio.fail_after(60):
            tmux.type("echo BEFORE-''ATTACH")
            await tmux.wait_for(b"BEFORE-ATTACH")
            assert tmux.modes() == "0 0 0 0 0 1"
            tmux.type(f"{sys.executable} -m orca.cli.main term attach {sid}")
            await tmux.wait_for(b"SCREEN-READY")
            # The snapshot draws the cells, then states the modes; its mode trailer ends
            # with the keypad's (application keypad: ESC =). Only then are they all set.
            await tmux.wait_for(b"\x1b=")
            # The snapshot reproduced the program's modes in the user's terminal.
            assert tmux.modes() == "1 1 1 1 1 1"
            [row] = user.json("term", "ls")["sessions"]
            assert row["subscribers"] == 1  # issue 15 item 8: the attachment is counted

            tmux.run("send-keys", "C-]")
            restored = await tmux.wait_for(b"[detached]")
            # tmux 3.3 shows no bracketed-paste flag: the raw bytes show it turned off.
            assert b"\x1b[?2004l" in restored
            assert tmux.modes() == "0 0 0 0 0 1"
            tmux.type("echo AFTER-''DETACH")
            await tmux.wait_for(b"AFTER-DETACH")  # the shell reads the keyboard again
            screen = tmux.run("capture-pane", "-p")
            [row] = user.json("term", "ls")["sessions"]
            assert row["subscribers"] == 0 and row["running"]
            return screen
    finally:
        tmux.close()


@needs_tmux
@pytest.mark.timeout(120)
async def test_detach_restores_the_users_terminal_in_a_tmux_pane(
    user: User, tmp_path: Path
) -> None:
    """Ctrl-] out of a full-screen program: alternate screen, mouse, keypad modes and
    bracketed paste are off in the user's (tmux) terminal and the shell is back."""
    screen = await _attach_and_detach_in_tmux(user, tmp_path)
    assert "[detached]" in screen and "AFTER-DETACH" in screen
    assert "SCREEN-READY" not in screen


@needs_tmux
@pytest.mark.timeout(120)
async def test_detach_brings_back_what_the_shell_showed_before_attach(
    user: User, tmp_path: Path
) -> None:
    """Attach draws in an outer alternate screen (as tmux does with smcup): after the
    detach the pane shows the shell's lines from before the attach, and none of the
    session's."""
    screen = await _attach_and_detach_in_tmux(user, tmp_path)
    lines = screen.splitlines()
    assert any("BEFORE-ATTACH" in line and "echo" not in line for line in lines)
    assert "FULLSCREEN" not in screen and "SCREEN-READY" not in screen


async def _wait_for_checkpoint(history_dir: Path) -> None:
    """Until a model checkpoint is renamed into place (inotify, no polling)."""
    await until_names(history_dir, lambda names: any(n.endswith(MODEL_SUFFIX) for n in names))


async def _read_from_start(client: RpcClient, tap: EventTap, sid: str, until: bytes) -> bytes:
    """The session's whole output stream from offset 0 until it contains ``until``
    (after a read that brought nothing new, waits for an event: output or heartbeat)."""
    data = b""
    while until not in data:
        reply = await client.call(
            ptyd.READ.name, {"sessionId": sid, "since": len(data)}, timeout=5, retries=3
        )
        assert not reply["gap"]
        data += reply["data"]
        if not reply["data"]:
            await tap.receive()
    return data


@pytest.mark.timeout(120)
async def test_reattach_after_kill_9_of_ptyd_shows_the_exact_screen(
    user: User, tmp_path: Path
) -> None:
    """Checkpoint + journal tail rebuild the model after kill -9; the attach snapshot
    draws the screen a client that watched from the start would show."""
    paths = user.paths
    sid = _spawn(user, tmp_path, [sys.executable, "-c", DRAW])
    with trio.fail_after(90):
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as client,
            open_rpc_client(paths.ipc_endpoint("supervisor", "rpc")) as sup,
            lifecycle(user.orca_home) as (mirror, rec),
            trio.open_nursery() as nursery,
        ):
            tap = await actor_tap(user.orca_home, ptyd.CONTRACT, topics=[ptyd.OUTPUT.type]).start(
                nursery
            )
            await _read_from_start(client, tap, sid, b"PART-ONE")
            await _wait_for_checkpoint(paths.terminal_history_dir)  # the idle checkpoint
            await client.call(ptyd.WRITE.name, {"sessionId": sid, "text": "go\n"})
            stream = await _read_from_start(client, tap, sid, b"\x1b[12;40H")
            status = await sup.call(supervisor.STATUS.name)
            ptyd_pid = next(a["pid"] for a in status["actors"] if a["name"] == "ptyd")
            os.kill(ptyd_pid, signal.SIGKILL)
            await mirror.wait_until(
                lambda m: rec.seen(supervisor.STARTED, "ptyd", lambda d: d.pid != ptyd_pid)
            )
            await client.call(sys_contract.PING.name, timeout=5, retries=3)
            attached = await client.call(ptyd.ATTACH.name, {"sessionId": sid}, timeout=5)
            assert attached["end"] == len(stream), "the stream went on after the kill"
            tap.close()
            nursery.cancel_scope.cancel()

    watcher = TerminalModel(COLS, ROWS)
    watcher.feed(stream)
    rebuilt = TerminalModel(COLS, ROWS)
    rebuilt.feed(attached["data"])
    expected = watcher.screen_state()
    assert expected.modes.alt_screen and expected.title == "reattach-title"
    assert rebuilt.screen_state() == expected


# Issue 23 item 2: asks DSR, DA and OSC 11 before anyone attached (the model answers:
# no terminal is there), then logs every byte its stdin receives, raw. "P" makes it ask
# DSR and DA again (while attached: the attached terminal answers; not OSC 11, which a
# tmux server without a client of its own leaves unanswered), "Q" DSR once more, "Z"
# ends the log.
QUERYING_AGENT = r"""
import os, re, sys, tty
tty.setraw(0)
log = open(sys.argv[1], "ab", buffering=0)
os.write(1, b"\x1b[6n\x1b[c\x1b]11;?\x07")
got = b""
while not (re.search(rb"\x1b\[\d+;\d+R", got) and re.search(rb"\x1b\[\?[\d;]*c", got)
           and re.search(rb"\x1b\]11;rgb:[^\x07\x1b]*(\x07|\x1b\\)", got)):
    data = os.read(0, 4096)
    log.write(data)
    got += data
os.write(1, b"ANSWERED-AT-START\r\n")
pending = 0
while True:
    data = os.read(0, 4096)
    log.write(data)
    if pending and re.search(rb"\x1b\[\d+;\d+R", data):
        os.write(1, b"LIVE-ANSWERED-%d\r\n" % pending)
    if b"P" in data:
        pending += 1
        os.write(1, b"\x1b[6n\x1b[cPRINTED-AGAIN\r\n")
    if b"Q" in data:
        pending += 1
        os.write(1, b"\x1b[6nLIVE-QUERY\r\n")
    if b"Z" in data:
        os.write(1, b"LOG-DONE\r\n")
"""
DSR_ANSWER = re.compile(rb"\x1b\[\d+;\d+R")
DA_ANSWER = re.compile(rb"\x1b\[\?[\d;]*c")
OSC11_ANSWER = re.compile(rb"\x1b\]11;rgb:[^\x07\x1b]*(?:\x07|\x1b\\)")


@needs_tmux
@pytest.mark.timeout(120)
async def test_reattach_types_no_answer_and_a_live_query_is_answered_once(
    user: User, tmp_path: Path
) -> None:
    """An agent asked DSR, DA and OSC 11 before any attach (answered once, by ptyd's
    model); attached in a tmux pane it asks DSR and DA again (answered once: by the model
    since issue 24, the terminal being handed to ptyd);
    detached and attached again, its stdin gets nothing; a DSR asked then gets exactly
    one answer. The agent's own raw stdin log is the judge."""
    log = tmp_path / "stdin.log"
    sid = _spawn(user, tmp_path, [sys.executable, "-c", QUERYING_AGENT, str(log)])
    attach = f"{sys.executable} -m orca.cli.main term attach {sid}"
    with trio.fail_after(30):  # answered before anyone attached: by the model
        async with (
            open_rpc_client(user.paths.ipc_endpoint("ptyd", "rpc")) as client,
            trio.open_nursery() as nursery,
        ):
            tap = await actor_tap(user.orca_home, ptyd.CONTRACT, topics=[ptyd.OUTPUT.type]).start(
                nursery
            )
            await _read_from_start(client, tap, sid, b"ANSWERED-AT-START")
            tap.close()
            nursery.cancel_scope.cancel()
    at_start = log.read_bytes()
    tmux = Tmux(user.env, tmp_path / "pane.fifo")
    try:
        with trio.fail_after(90):
            tmux.type(attach)
            await tmux.wait_for(b"ANSWERED-AT-START")  # the redraw
            tmux.run("send-keys", "P")  # asked again while attached
            await tmux.wait_for(b"LIVE-ANSWERED-1")
            tmux.run("send-keys", "C-]")
            await tmux.wait_for(b"[detached]")
            tmux.type("echo BETWEEN-''ATTACHES")
            await tmux.wait_for(b"BETWEEN-ATTACHES")
            tmux.type(attach)  # the history holds every query asked so far
            await tmux.wait_for(b"PRINTED-AGAIN")
            tmux.run("send-keys", "Q")
            await tmux.wait_for(b"LIVE-ANSWERED-2")
            tmux.run("send-keys", "Z")
            await tmux.wait_for(b"LOG-DONE")
            tmux.run("send-keys", "C-]")
            await tmux.wait_for(b"[detached]")
    finally:
        tmux.close()
    typed = log.read_bytes()
    # Before any attach: one answer to each query, the model's (its cursor, its DA, its
    # default background), and nothing else.
    assert [len(p.findall(at_start)) for p in (DSR_ANSWER, DA_ANSWER, OSC11_ANSWER)] == [1, 1, 1]
    assert DSR_ANSWER.sub(b"", DA_ANSWER.sub(b"", OSC11_ANSWER.sub(b"", at_start))) == b""
    after = typed[len(at_start) :]
    # Then: "P", its two answers (from tmux, the attached terminal), "Q" (typed after
    # the reattach, so every byte the reattach could have typed came before it), its one
    # answer, "Z". Nothing answers the queries the history holds a second time.
    p, rest = after.split(b"P", 1)
    assert p == b""
    answers_to_p, rest = rest.split(b"Q", 1)
    assert sorted(len(x.findall(answers_to_p)) for x in (DSR_ANSWER, DA_ANSWER)) == [1, 1]
    assert DSR_ANSWER.sub(b"", DA_ANSWER.sub(b"", answers_to_p)) == b""
    answer_to_q, tail = rest.split(b"Z", 1)
    assert DSR_ANSWER.fullmatch(answer_to_q), answer_to_q
    assert tail == b""
