"""The relay of a handed terminal, both of its steps (the native one, ``_relaystep.c``,
and the Python one it stands in for): a real ptyd, a real PTY as the user's terminal.

* a flood of plain text with colour sequences among it (some cut across writes), read
  as fast as a terminal reads, reaches the terminal byte for byte as the journal has it;
* keys typed one by one, each echoed before the next, reach the journal and the
  session's subscribers as they reached the terminal;
* keys typed with the detach key among them: those before it reach the program, the
  terminal is let go of (``detached``), those after it reach nothing.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import tty
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
from support.actors import RunningActor, actor_tap, running_actor
from support.relay_steps import RELAY_STEPS, relay_step_env

from orca.client.handed import HandedTerminal
from orca.contracts import ptyd
from orca.paths import OrcaPaths, resolve_paths

# READY, then on "go": GO-MARK, ~1.2 MB of lines (every 40th coloured, every 97th with
# its sequence cut across two writes), END-MARK; then it exits.
FLOOD = r"""
import os, sys
w = lambda s: os.write(1, s.encode())
w('READY\r\n')
sys.stdin.readline()
w('GO-MARK\r\n')
for i in range(12000):
    if i % 97 == 0:
        w(f'\x1b[3{i % 8}'); w(f';1mcut {i}\x1b[0m\r\n')
    elif i % 40 == 0:
        w(f'\x1b[38;5;{i % 256}mline {i}\x1b[0m ' + 'x' * 60 + '\r\n')
    else:
        w(f'{i:08d} ' + 'abcdefghij' * 9 + '\r\n')
w('END-MARK\r\n')
"""


@pytest.fixture(params=RELAY_STEPS)
async def ptyd_actor(request: pytest.FixtureRequest, tmp_path: Path) -> RunningActor:
    env = relay_step_env(request.param)
    env["ORCA_PTYD_SCROLLBACK_BYTES"] = str(4 * 1024 * 1024)  # term.read holds the flood
    async with running_actor("ptyd", tmp_path / "home", env) as pt:
        yield pt  # type: ignore[misc]


def _spawn_argv(argv: list[str]) -> dict[str, object]:
    return {"argv": argv, "cwd": "/", "worktreeId": "r::/w"}


class Terminal:
    """A PTY of this process handed to ptyd as ``orca term attach`` hands its own (raw);
    ``until`` reads its master (in a thread: the handed link is blocking)."""

    def __init__(self, paths: OrcaPaths, sid: str) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        os.set_blocking(self.master, False)
        self.link = HandedTerminal.connect(paths)
        self.link.hand(sid, self.slave, self.slave, 120, 40)
        self.seen = b""
        self.messages: list[ptyd.FromPtyd] = []

    def until(self, done: Callable[[Terminal], bool]) -> None:
        poller = select.poll()
        poller.register(self.master, select.POLLIN)
        poller.register(self.link.fileno(), select.POLLIN)
        while not done(self):
            for fd, _events in poller.poll(1000):
                if fd == self.master:
                    try:
                        self.seen += os.read(self.master, 65536)
                    except BlockingIOError:
                        pass
                else:
                    self.link.receive()
                    while (message := self.link.take_message()) is not None:
                        self.messages.append(message)

    def drain(self) -> None:
        """What the terminal still holds (ptyd writes its last output before the exit)."""
        while True:
            try:
                data = os.read(self.master, 65536)
            except BlockingIOError:
                return
            self.seen += data

    def close(self) -> None:
        self.link.close()
        os.close(self.master)
        os.close(self.slave)


def _ended(term: Terminal) -> bool:
    return any(isinstance(m, ptyd.StreamExit) for m in term.messages)


def _released(term: Terminal) -> bool:
    return any(isinstance(m, ptyd.StreamReleased) for m in term.messages)


async def _journal(pt: RunningActor, sid: str) -> bytes:
    reply = await pt.call("term.read", {"sessionId": sid, "since": 0})
    assert not reply["gap"]
    data: bytes = reply["data"]
    return data


async def test_a_flood_reaches_the_terminal_as_the_journal_has_it(
    ptyd_actor: RunningActor,
) -> None:
    pt = ptyd_actor
    paths = resolve_paths({"ORCA_HOME": str(pt.home)})
    with trio.fail_after(90):
        sid = (await pt.call("term.spawn", _spawn_argv([sys.executable, "-c", FLOOD])))["sessionId"]
        term = Terminal(paths, sid)
        try:
            await trio.to_thread.run_sync(term.until, lambda t: b"READY" in t.seen)
            os.write(term.master, b"go\r")
            await trio.to_thread.run_sync(term.until, _ended)
            term.drain()
        finally:
            term.close()
    journal = await _journal(pt, sid)
    assert journal.count(b"END-MARK") == 1
    shown = term.seen.partition(b"GO-MARK")[2]
    expected = journal.partition(b"GO-MARK")[2]
    assert len(expected) > 1_000_000
    assert b"\x18" not in shown  # no repaint came between: the stream itself, whole
    assert shown == expected


async def test_keys_after_the_detach_key_reach_nothing(ptyd_actor: RunningActor) -> None:
    pt = ptyd_actor
    paths = resolve_paths({"ORCA_HOME": str(pt.home)})
    with trio.fail_after(60):
        sid = (await pt.call("term.spawn", _spawn_argv(["/bin/cat"])))["sessionId"]
        term = Terminal(paths, sid)
        try:
            os.write(term.master, b"typed-1 ")
            await trio.to_thread.run_sync(term.until, lambda t: b"typed-1" in t.seen)
            os.write(term.master, b"typed-2\x1dlost-3")
            await trio.to_thread.run_sync(term.until, _released)
        finally:
            term.close()
        released = [m for m in term.messages if isinstance(m, ptyd.StreamReleased)]
        assert [m.reason for m in released] == [ptyd.RELEASED_DETACHED]
        async with trio.open_nursery() as nursery:
            tap = actor_tap(pt.home, ptyd.CONTRACT, topics=[ptyd.OUTPUT.type])
            await tap.start(nursery)
            await pt.call("term.write", {"sessionId": sid, "text": "\r"})
            line = b"typed-1 typed-2\r\n"  # the tty's echo of it, then cat's
            journal = await _journal(pt, sid)
            while journal.count(line) < 2:
                await tap.receive()
                journal = await _journal(pt, sid)
            nursery.cancel_scope.cancel()
        tap.close()
        assert b"lost-3" not in journal


async def test_keys_typed_one_by_one_echo_and_reach_every_reader(
    ptyd_actor: RunningActor,
) -> None:
    """Each key's echo is on the terminal before the next key is typed; the journal
    and a subscriber of the session's output (the loop's side, taken in batches) get
    the same bytes."""
    pt = ptyd_actor
    paths = resolve_paths({"ORCA_HOME": str(pt.home)})
    typed = b"the quick brown fox jumps over the lazy dog"
    with trio.fail_after(60):
        sid = (await pt.call("term.spawn", _spawn_argv(["/bin/cat"])))["sessionId"]
        async with trio.open_nursery() as nursery:
            tap = actor_tap(pt.home, ptyd.CONTRACT, topics=[ptyd.output_topic(sid)])
            await tap.start(nursery)
            term = Terminal(paths, sid)
            try:
                os.write(term.master, b">")
                await trio.to_thread.run_sync(term.until, lambda t: b">" in t.seen)
                for i in range(len(typed)):
                    os.write(term.master, typed[i : i + 1])
                    shown = b">" + typed[: i + 1]
                    await trio.to_thread.run_sync(term.until, lambda t, s=shown: s in t.seen)
                os.write(term.master, b"\r")
                line = b">" + typed + b"\r\n"
                await trio.to_thread.run_sync(term.until, lambda t: t.seen.count(line) == 2)
            finally:
                term.close()
            published = b""
            while published.count(line) < 2:
                published += (await tap.next_of(ptyd.OUTPUT)).data
            nursery.cancel_scope.cancel()
        tap.close()
    journal = await _journal(pt, sid)
    assert journal == published == line * 2  # the tty's echo of the line, then cat's
    assert term.seen.endswith(journal)


async def test_output_reaches_subscribers_while_keys_keep_coming(
    ptyd_actor: RunningActor,
) -> None:
    """A program that stops echoing prints once, then only reads: keys typed without a
    pause (a long paste) must not keep the relay from handing that output to the loop,
    so a subscriber of the session's output gets it while the typing goes on."""
    pt = ptyd_actor
    paths = resolve_paths({"ORCA_HOME": str(pt.home)})
    agent = "read go; stty -echo; printf SHOWN-ONCE; exec cat >/dev/null"
    stop = threading.Event()

    def paste(master: int) -> None:
        while not stop.is_set():
            try:
                os.write(master, b"k" * 512)  # as fast as the terminal takes them
            except BlockingIOError:
                select.select([], [master], [], 0.1)

    with trio.fail_after(30):
        sid = (await pt.call("term.spawn", _spawn_argv(["/bin/sh", "-c", agent])))["sessionId"]
        async with trio.open_nursery() as nursery:
            tap = actor_tap(pt.home, ptyd.CONTRACT, topics=[ptyd.output_topic(sid)])
            await tap.start(nursery)
            term = Terminal(paths, sid)
            typist = threading.Thread(target=paste, args=(term.master,), daemon=True)
            try:
                os.write(term.master, b"go\r")
                typist.start()
                await trio.to_thread.run_sync(term.until, lambda t: b"SHOWN-ONCE" in t.seen)
                published = b""
                while b"SHOWN-ONCE" not in published:
                    published += (await tap.next_of(ptyd.OUTPUT)).data
                assert typist.is_alive()  # still typing when the subscriber got it
            finally:
                stop.set()
                if typist.is_alive():
                    typist.join()
                term.close()
            nursery.cancel_scope.cancel()
        tap.close()
