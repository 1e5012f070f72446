"""The attach stream (issue 14): input up, output down on one socket per attachment, and
exactly one terminal answering a program's queries. Both transports: the ROUTER
(``TerminalStream``, the TUI's) and the Unix socket (``LocalTerminalStream``,
``orca term attach``'s); tests marked ``both`` run once with each.

Each client here has a *terminal*: a real emulator (``TerminalModel``) fed with what
the client shows, whose answers to queries are typed back through the stream, as a
user's terminal would. So a query shown to two clients would be answered twice.
"""

from __future__ import annotations

import base64
import hashlib
import os
import random
import re
import signal
import socket
import stat
import struct
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import zmq
from support.actors import EventTap, stop_actor
from support.ptyd_harness import PtydProcess as Ptyd
from support.ptyd_harness import call_retrying, read_pid, running_ptyd, start_keeper, tree_env

from actors.ptyd.terminal_model import SCREEN_SWITCH, TerminalModel
from orca.actor import open_rpc_client
from orca.client import terminal as terminal_client
from orca.client.terminal import LocalTerminalStream, TerminalStream
from orca.contracts import ptyd as contract
from orca.contracts import sys as sys_contract
from orca.contracts.ptyd import LOCAL_STREAM_FILE
from orca.model.vt import ENTER_ALTERNATE_SCREEN, QueryFilter
from orca.paths import OrcaPaths, resolve_paths

WT = "repo1::/tmp/wt-stream"
PUMP_DEADLINE_S = 20.0
# Raw mode; for every line typed (up to CR) prints what it got; "ask" asks DSR and
# prints the answer it read; "quit" ends. A second answer to one query would show up
# at the start of the next CMD line.
# Keys typed before ``tty.setraw`` would be echoed, taken as a cooked line ("\r" made
# "\n") and then flushed by setraw's TCSAFLUSH: the program says when it reads raw, and
# the tests type only after that (``spawn``, ``until_ready``). On a loaded CI worker the
# interpreter's start took long enough for a test's first keys to be lost.
ASKER_READY = b"ASKER-RAW\r\n"
ASKER = r"""
import os, tty
tty.setraw(0)
os.write(1, b"ASKER-RAW\r\n")
def read_until(end):
    got = b""
    while not got.endswith(end):
        got += os.read(0, 1)
    return got
while True:
    cmd = read_until(b"\r")
    os.write(1, b"CMD:%r\r\n" % cmd)
    if cmd.endswith(b"ask\r"):
        os.write(1, b"\x1b[6n")
        os.write(1, b"ANS:%r\r\n" % read_until(b"R"))
    if cmd.endswith(b"split\r"):  # a query cut in two, a key awaited in between
        os.write(1, b"\x1b[6")
        os.read(0, 1)
        os.write(1, b"n")
        os.write(1, b"ANS:%r\r\n" % read_until(b"R"))
    if cmd.endswith(b"colour\r"):
        os.write(1, b"\x1b]11;?\x07")
        os.write(1, b"BG:%r\r\n" % read_until(b"\x07"))
    if cmd.endswith(b"quit\r"):
        break
"""
# Queries sent while nobody is attached (the model answers), then every byte of input
# is reported up to "q".
QUERIES_FIRST = r"""
import os, tty
tty.setraw(0)
os.write(1, b"\x1b[6n\x1b[c\x1b]11;?\x07\x1b]10;?\x1b\\QUERIED\r\n")
got = b""
while not got.endswith(b"q"):
    got += os.read(0, 1)
os.write(1, b"INPUT:%r\r\n" % got)
"""


# A ping with one more field nested 10,000 deep (issue 23: RecursionError ended ptyd).
DEEP_PING = b"\x82\xa1t\xa4ping\xa1x" + b"\x91" * 10_000 + b"\xc0"


KINDS = pytest.mark.parametrize(
    "kind", [TerminalStream, LocalTerminalStream], ids=["router", "local"]
)


@pytest.fixture
async def ptyd(tmp_path: Path) -> AsyncIterator[Ptyd]:
    async with running_ptyd(tmp_path / "home") as p:
        yield p


def paths_of(ptyd: Ptyd) -> OrcaPaths:
    return resolve_paths({"ORCA_HOME": str(ptyd.home)})


class Client:
    """A stream client and the terminal it draws in (which answers what it is shown)."""

    def __init__(
        self,
        ptyd: Ptyd,
        session_id: str,
        *,
        flat: bool = False,
        bg: tuple[int, int, int] = (0, 0, 0),
        kind: type[TerminalStream] = TerminalStream,
    ) -> None:
        self.stream, screen = kind.open(session_id, paths_of(ptyd), flat=flat)
        self.terminal = TerminalModel(80, 24, colors=((200, 200, 200), bg))
        self.shown = b""
        self.answers: list[bytes] = []
        self.repaints = 0
        if flat:
            self.terminal.feed(ENTER_ALTERNATE_SCREEN)
        self._show(screen)

    def _show(self, data: bytes) -> None:
        self.shown += data
        self.terminal.feed(data)
        for reply in self.terminal.take_replies():
            self.answers.append(reply)
            self.stream.write(reply)

    def pump_until(self, needle: bytes) -> None:
        """Show output until ``needle`` has been shown (blocking; run it in a thread)."""
        deadline = time.monotonic() + PUMP_DEADLINE_S
        while needle not in self.shown:
            assert time.monotonic() < deadline, f"no {needle!r} in {self.shown[-300:]!r}"
            for data, repaint in self.stream.poll_output(200):
                self.repaints += repaint
                self._show(data)

    def pump_to(self, offset: int) -> None:
        """Show output until the stream's position is ``offset`` (blocking)."""
        deadline = time.monotonic() + PUMP_DEADLINE_S
        while self.stream.cursor.offset < offset:
            assert time.monotonic() < deadline, f"at {self.stream.cursor.offset} of {offset}"
            for data, repaint in self.stream.poll_output(200):
                self.repaints += repaint
                self._show(data)

    async def until(self, needle: bytes) -> None:
        await trio.to_thread.run_sync(self.pump_until, needle)

    def close(self) -> None:
        self.stream.close()
        self.terminal.close()


async def spawn(ptyd: Ptyd, tmp_path: Path, program: str) -> str:
    """Spawn ``program``; ASKER's session is returned once it reads raw (ASKER_READY)."""
    spawned = await ptyd.call(
        "term.spawn",
        {"argv": [sys.executable, "-c", program], "cwd": str(tmp_path), "worktreeId": WT},
    )
    sid = str(spawned["sessionId"])
    if program == ASKER:
        await until_ready(ptyd.call, sid)
    return sid


async def until_ready(call: Callable[..., Awaitable[Any]], sid: str) -> None:
    """Until ASKER's session shows ASKER_READY (its output read from 0 every 50 ms:
    a term.read answers at once, and the program takes a fraction of a second)."""
    while ASKER_READY not in (await call("term.read", {"sessionId": sid, "since": 0}))["data"]:  # noqa: ASYNC110 - polled under the test's deadline
        await trio.sleep(0.05)


async def read_all(ptyd: Ptyd, tap: EventTap, sid: str, until: bytes) -> bytes:
    """The session's output from offset 0 (scripts' raw path), once it shows ``until``;
    read again after each event ``tap`` brings (output, or the heartbeat)."""
    while True:
        reply = await ptyd.call("term.read", {"sessionId": sid, "since": 0})
        if until in reply["data"]:
            return bytes(reply["data"])
        await tap.receive()


@KINDS
async def test_two_clients_one_answer_from_the_one_that_typed_last(
    ptyd: Ptyd, tmp_path: Path, kind: type[TerminalStream]
) -> None:
    """Two attached terminals that both answer what they are shown: each query gets
    exactly one answer, from the client that typed last; the other sees no query.
    (``local``: one client on each transport, the rule spans both.)"""
    with trio.fail_after(60):
        tap = await ptyd.tap([contract.OUTPUT.type])
        sid = await spawn(ptyd, tmp_path, ASKER)
        a, b = Client(ptyd, sid), Client(ptyd, sid, kind=kind)
        try:
            b.stream.write(b"ask\r")  # b typed last: b's terminal answers
            await b.until(b"ANS:")
            await a.until(b"ANS:")
            assert (len(a.answers), len(b.answers)) == (0, 1)
            a.stream.write(b"ask\r")  # now a typed last
            await trio.to_thread.run_sync(lambda: _pump_count(a, b"ANS:", 2))
            await trio.to_thread.run_sync(lambda: _pump_count(b, b"ANS:", 2))
            assert (len(a.answers), len(b.answers)) == (1, 1)
            b.stream.write(b"quit\r")
            await a.until(b"quit")
            await b.until(b"quit")
        finally:
            a.close()
            b.close()
        assert all(answer.startswith(b"\x1b[") for answer in a.answers + b.answers)
        output = await read_all(ptyd, tap, sid, b"CMD:b'quit\\r'")
        lines = re.findall(rb"(?:CMD|ANS):b'[^']*'", output)
        # Nothing but what was typed: no second answer before any command.
        assert [line.split(b":", 1)[0] for line in lines] == [b"CMD", b"ANS"] * 2 + [b"CMD"]
        assert [line for line in lines if line.startswith(b"CMD:")] == [
            b"CMD:b'ask\\r'",
            b"CMD:b'ask\\r'",
            b"CMD:b'quit\\r'",
        ]
        for line in lines:
            if line.startswith(b"ANS:"):
                assert line.count(b"R") == 1 and line.startswith(b"ANS:b'\\x1b[")


def _pump_count(client: Client, needle: bytes, count: int) -> None:
    deadline = time.monotonic() + PUMP_DEADLINE_S
    while client.shown.count(needle) < count:
        assert time.monotonic() < deadline, f"{needle!r} not {count}x in {client.shown[-300:]!r}"
        for data, _repaint in client.stream.poll_output(200):
            client._show(data)


@KINDS
async def test_a_query_split_across_chunks_is_answered_once(
    ptyd: Ptyd, tmp_path: Path, kind: type[TerminalStream]
) -> None:
    """The other client types while a query is half written: the terminal that was
    shown its first half answers it; the one that typed strips it; one answer."""
    with trio.fail_after(60):
        tap = await ptyd.tap([contract.OUTPUT.type])
        sid = await spawn(ptyd, tmp_path, ASKER)
        a, b = Client(ptyd, sid, kind=kind), Client(ptyd, sid, kind=kind)
        try:
            b.stream.write(b"split\r")
            await b.until(b"CMD:b'split\\r'\r\n\x1b[6")  # the first half, shown to b
            a.stream.write(b"x")  # now a typed last, in the middle of the query
            await b.until(b"ANS:")  # (b's terminal answers while b is pumped)
            await a.until(b"ANS:")
            b.stream.write(b"quit\r")
            await a.until(b"CMD:b'quit")
            await b.until(b"CMD:b'quit")
            assert (len(a.answers), len(b.answers)) == (0, 1)
        finally:
            a.close()
            b.close()
        output = await read_all(ptyd, tap, sid, b"CMD:b'quit\\r'")
        assert re.findall(rb"CMD:b'([^']*)'", output) == [b"split\\r", b"quit\\r"]
        assert len(re.findall(rb"ANS:b'\\x1b\[\d+;\d+R'", output)) == 1


@KINDS
async def test_a_client_attaching_inside_a_query_does_not_answer_it(
    ptyd: Ptyd, tmp_path: Path, kind: type[TerminalStream]
) -> None:
    """Issue 23 (a second attach's screen containing a query): a client that attaches
    while the program is half-way through writing a query gets a redraw without that
    half (the model's continuation of an unfinished CSI is empty), so when the rest
    comes only the terminal that saw the first half answers: one answer."""
    with trio.fail_after(60):
        tap = await ptyd.tap([contract.OUTPUT.type])
        sid = await spawn(ptyd, tmp_path, ASKER)
        b = Client(ptyd, sid, kind=kind)
        c: Client | None = None
        try:
            b.stream.write(b"split\r")
            await b.until(b"CMD:b'split\\r'\r\n\x1b[6")  # the first half, shown to b
            c = Client(ptyd, sid, kind=kind)  # attaches inside the query
            assert not c.shown.endswith(b"\x1b[6"), "no half query in the redraw"
            b.stream.write(b"x")  # the program writes the rest
            await b.until(b"ANS:")
            await c.until(b"ANS:")
            b.stream.write(b"quit\r")
            await b.until(b"CMD:b'quit")
            await c.until(b"CMD:b'quit")
            assert (len(b.answers), len(c.answers)) == (1, 0)
        finally:
            b.close()
            if c is not None:
                c.close()
        output = await read_all(ptyd, tap, sid, b"CMD:b'quit\\r'")
        assert re.findall(rb"CMD:b'([^']*)'", output) == [b"split\\r", b"quit\\r"]
        assert len(re.findall(rb"ANS:b'\\x1b\[\d+;\d+R'", output)) == 1


async def test_osc_colour_queries_are_answered_by_the_client_that_typed_last(
    ptyd: Ptyd, tmp_path: Path
) -> None:
    """OSC 11 (background colour) is answered by the attached terminal that typed last,
    with its own colour, not the model's; once per query."""
    with trio.fail_after(60):
        tap = await ptyd.tap([contract.OUTPUT.type])
        sid = await spawn(ptyd, tmp_path, ASKER)
        a = Client(ptyd, sid, bg=(0x11, 0x22, 0x33))
        b = Client(ptyd, sid, bg=(0x44, 0x55, 0x66))
        try:
            b.stream.write(b"colour\r")
            await trio.to_thread.run_sync(lambda: _pump_count(b, b"BG:", 1))
            a.stream.write(b"colour\r")
            await trio.to_thread.run_sync(lambda: _pump_count(a, b"BG:", 2))
            a.stream.write(b"quit\r")
            await a.until(b"CMD:b'quit")
        finally:
            a.close()
            b.close()
        output = await read_all(ptyd, tap, sid, b"CMD:b'quit\\r'")
        answers = re.findall(rb"BG:b'([^']*)'", output)
        assert answers == [
            b"\\x1b]11;rgb:4444/5555/6666\\x07",
            b"\\x1b]11;rgb:1111/2222/3333\\x07",
        ]
        assert re.findall(rb"CMD:b'([^']*)'", output) == [b"colour\\r", b"colour\\r", b"quit\\r"]


@KINDS
async def test_a_client_that_went_away_leaves_the_answer_to_the_model(
    ptyd: Ptyd, tmp_path: Path, kind: type[TerminalStream]
) -> None:
    """The answering client dies without a word (its socket closed): the program's next
    query is answered by ptyd's model, once."""
    with trio.fail_after(60):
        tap = await ptyd.tap([contract.OUTPUT.type])
        sid = await spawn(ptyd, tmp_path, ASKER)
        gone = Client(ptyd, sid, kind=kind)
        gone.stream.write(b"hello\r")
        await gone.until(b"CMD:b'hello\\r'")
        if isinstance(gone.stream, LocalTerminalStream):
            gone.stream.socket.close()  # a crash: no bye
        else:
            gone.stream.socket.close(linger=0)
        gone.terminal.close()
        # ptyd learns a ROUTER peer is gone when a send to it fails, and libzmq may
        # take a moment to tear its pipe down: until ptyd has let it go, a query sent
        # its way is lost with it (a window this test does not measure). Lines typed
        # make ptyd send until it does.
        for n in range(1, 1000):
            listed = await ptyd.call("term.list", {})
            (row,) = [r for r in listed["sessions"] if r["sessionId"] == sid]
            if row["subscribers"] == 0:
                break
            await ptyd.call("term.write", {"sessionId": sid, "text": f"noop{n}\r"})
            await read_all(ptyd, tap, sid, f"CMD:b'noop{n}\\r'".encode())
        await ptyd.call("term.write", {"sessionId": sid, "text": "ask\r"})
        output = await read_all(ptyd, tap, sid, b"ANS:")
        assert output.count(b"ANS:b'\\x1b[") == 1
        await ptyd.call("term.write", {"sessionId": sid, "text": "quit\r"})
        output = await read_all(ptyd, tap, sid, b"CMD:b'quit\\r'")
        assert b"CMD:b'quit\\r'" in output  # no stray answer typed before it
        rows = (await ptyd.call("term.list", {}))["sessions"]
        assert [r["subscribers"] for r in rows] == [0]


async def test_reattach_to_history_with_queries_types_nothing(ptyd: Ptyd, tmp_path: Path) -> None:
    """DSR, DA and OSC 10/11 were asked (and answered by the model) before anyone
    attached; two stream clients attaching later are shown no query, so their terminals
    type nothing into the program."""
    with trio.fail_after(60):
        tap = await ptyd.tap([contract.OUTPUT.type])
        sid = await spawn(ptyd, tmp_path, QUERIES_FIRST)
        await read_all(ptyd, tap, sid, b"QUERIED")
        clients = [Client(ptyd, sid), Client(ptyd, sid, flat=True, kind=LocalTerminalStream)]
        try:
            for client in clients:
                assert b"QUERIED" in client.shown
                assert QueryFilter().feed(client.shown) == client.shown
            clients[0].stream.write(b"q")
            for client in clients:
                await client.until(b"INPUT:")
            assert [c.answers for c in clients] == [[], []]
        finally:
            for client in clients:
                client.close()
        output = await read_all(ptyd, tap, sid, b"INPUT:")
        typed = output.split(b"INPUT:", 1)[1].split(b"\r\n", 1)[0]
        # The model's four answers, then the "q": nothing a client's terminal added.
        assert typed.count(b"R") == 1 and typed.count(b"rgb:") == 2
        assert typed.count(b"c\\x1b]11;rgb:") == 1 and typed.endswith(b"\\x1b\\\\q'")


FULLSCREEN_THEN_BACK = r"""
import os, sys, tty
tty.setraw(0)
w = sys.stdout.write
w("primary line one\r\nprimary \x1b[1;32mgreen\x1b[0m\r\n$ "); sys.stdout.flush()
os.read(0, 1)
w("\x1b[?1049h\x1b[?1000h\x1b[2J\x1b[H\x1b[7m TUI \x1b[0m\x1b[5;5Hin the alternate screen")
sys.stdout.flush()
os.read(0, 1)
w("\x1b[?1000l\x1b[?1049lback at the prompt"); sys.stdout.flush()
os.read(0, 1)
"""


@KINDS
async def test_a_flat_client_sees_each_screen_without_a_screen_switch(
    ptyd: Ptyd, tmp_path: Path, kind: type[TerminalStream]
) -> None:
    """``flat`` (what ``orca term attach`` uses inside its outer alternate screen): the
    program's screen switches never reach the client; it is repainted instead, and its
    terminal shows what a terminal that watched from the start shows."""
    with trio.fail_after(60):
        tap = await ptyd.tap([contract.OUTPUT.type])
        sid = await spawn(ptyd, tmp_path, FULLSCREEN_THEN_BACK)
        await read_all(ptyd, tap, sid, b"$ ")
        client = Client(ptyd, sid, flat=True, kind=kind)
        try:
            client.stream.write(b"x")
            await client.until(b"in the alternate screen")
            client.stream.write(b"x")
            await client.until(b"back at the prompt")
            assert SCREEN_SWITCH.search(client.shown) is None
            output = await read_all(ptyd, tap, sid, b"back at the prompt")
            watcher = TerminalModel(80, 24)
            watcher.feed(output)
            assert not watcher.modes.alt_screen
            state = client.terminal.screen_state()
            assert state.cells == watcher.screen_state().cells
            assert state.cursor == watcher.cursor
            assert client.terminal.modes.alt_screen  # still in the outer alternate screen
            watcher.close()
        finally:
            client.close()


async def test_stream_socket_is_private_and_refuses_garbage(ptyd: Ptyd, tmp_path: Path) -> None:
    """The endpoint is a 0600 socket in the runtime dir (named in term.attach's reply);
    malformed messages and messages from strangers get error replies, and ptyd goes on."""
    with trio.fail_after(30):
        sid = await spawn(ptyd, tmp_path, ASKER)
        reply = await ptyd.call("term.attach", {"sessionId": sid})
        endpoint = reply["stream"]
        path = endpoint.removeprefix("ipc://")
        assert endpoint == paths_of(ptyd).ipc_endpoint("ptyd", contract.ATTACH_STREAM_KIND)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

        def probe() -> list[object]:
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(endpoint)
            decoder = msgspec.msgpack.Decoder(contract.FromPtyd)
            answers: list[object] = []
            try:
                for body in (
                    b"\xc1garbage",
                    DEEP_PING,
                    msgspec.msgpack.encode({"t": "nope"}),
                    msgspec.msgpack.encode({"t": "input", "data": b"x"}),  # not attached
                    msgspec.msgpack.encode({"t": "hello", "sessionId": "repo1::/x@@00000000"}),
                ):
                    sock.send(body)
                    assert sock.poll(5000, zmq.POLLIN)
                    answers.append(decoder.decode(sock.recv()))
            finally:
                sock.close(linger=0)
            return answers

        answers = await trio.to_thread.run_sync(probe)
        assert [a.code for a in answers if isinstance(a, contract.StreamError)] == [
            "bad_request",
            "bad_request",
            "bad_request",
            contract.NOT_ATTACHED,
            "not_found",
        ]
        client = Client(ptyd, sid)  # still serving
        try:
            client.stream.write(b"still\r")
            await client.until(b"CMD:b'still\\r'")
            rows = (await ptyd.call("term.list", {}))["sessions"]
            assert rows[0]["subscribers"] == 1
        finally:
            client.close()


@KINDS
async def test_an_attached_client_resumes_after_kill_9_of_ptyd(
    tmp_path: Path, kind: type[TerminalStream]
) -> None:
    """ptyd is killed under an attached stream client (the keeper holds the PTY and
    starts ptyd again): the first keys typed to the new ptyd reach the program, the
    client attaches again by offset and shows the output that followed, nothing twice.
    (Keys written into the dying connection itself are lost: there are no acks.)"""
    home = tmp_path / "home"
    paths = resolve_paths({"ORCA_HOME": str(home)}).ensure()
    pidfile = tmp_path / "ptyd.pid"
    keeper = start_keeper(paths.runtime_dir / "ptyd-keeper.sock", pidfile, tree_env(home))
    child = 0
    try:
        async with open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as rpc:
            with trio.fail_after(60):
                await call_retrying(rpc, "term.list", {})
                args = {"argv": [sys.executable, "-c", ASKER], "cwd": "/", "worktreeId": WT}
                spawned = await call_retrying(rpc, "term.spawn", args)
                sid, child = spawned["sessionId"], spawned["pid"]
                await until_ready(rpc.call, sid)
                stream, _screen = await trio.to_thread.run_sync(lambda: kind.open(sid, paths))
                shown = bytearray()

                def pump(needle: bytes) -> None:
                    deadline = time.monotonic() + PUMP_DEADLINE_S
                    while needle not in shown:
                        assert time.monotonic() < deadline, bytes(shown[-300:])
                        for data, _repaint in stream.poll_output(200):
                            shown.extend(data)
                        stream.keepalive()

                try:
                    stream.write(b"one\r")
                    await trio.to_thread.run_sync(pump, b"CMD:b'one\\r'")
                    first = read_pid(pidfile)
                    os.kill(first, signal.SIGKILL)
                    await call_retrying(rpc, "term.list", {})  # the next ptyd serves
                    assert read_pid(pidfile) != first
                    # To a ptyd that does not know this client yet: typed all the same.
                    stream.write(b"two\r")
                    await trio.to_thread.run_sync(pump, b"CMD:b'two\\r'")
                    stream.write(b"quit\r")
                    await trio.to_thread.run_sync(pump, b"CMD:b'quit\\r'")
                finally:
                    stream.close()
                assert re.findall(rb"CMD:b'([^']*)'", bytes(shown)) == [
                    b"one\\r",
                    b"two\\r",
                    b"quit\\r",
                ]
    finally:
        await stop_actor(keeper, grace=20.0)
        if child:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass


FLOOD = r"""
import sys, time
out = sys.stdout
for i in range(300000):
    out.write("line %07d %s\r\n" % (i, "x" * 60))
out.write("\x1b[1;33mDONE\x1b[0m\r\n")
out.flush()
time.sleep(600)
"""


async def test_a_client_that_fell_behind_catches_up_to_the_exact_screen(
    ptyd: Ptyd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that does not read while 22 MB are printed (its queue fills, ptyd skips
    it, the scrollback trims what it missed) resyncs by offset - a redraw - and ends
    with the model's screen, at the session's end offset."""
    monkeypatch.setattr(terminal_client, "STREAM_RCVHWM", 8)  # a small queue fills fast
    with trio.fail_after(60):
        tap = await ptyd.tap([contract.OUTPUT.type])
        sid = await spawn(ptyd, tmp_path, "import os; os.read(0, 1)\n" + FLOOD)
        client = Client(ptyd, sid)
        try:
            client.stream.write(b"g\r")  # the flood starts; the client reads nothing yet
            await wait_printed(ptyd, tap, sid, b"DONE")
            end = (await ptyd.call("term.read", {"sessionId": sid}))["end"]
            await trio.to_thread.run_sync(client.pump_to, end)
            assert client.repaints >= 1  # what it missed was beyond the scrollback
            attached = await ptyd.call("term.attach", {"sessionId": sid})
            model = TerminalModel(80, 24)
            model.feed(attached["data"])
            assert client.terminal.screen_state().cells == model.screen_state().cells
            model.close()
        finally:
            client.close()


async def wait_printed(ptyd: Ptyd, tap: EventTap, sid: str, needle: bytes) -> None:
    """Until the session printed ``needle`` (live events; a heartbeat looks at the
    scrollback, in case the events that carried it were dropped)."""
    tail = b""
    while True:
        got = await tap.receive()
        if isinstance(got.data, contract.OutputChunk) and got.data.session_id == sid:
            tail = (tail + got.data.data)[-4096:]
            if needle in tail:
                return
        elif got.envelope.type == sys_contract.HEARTBEAT_TYPE:
            reply = await ptyd.call("term.read", {"sessionId": sid})
            if needle in reply["data"][-4096:]:
                return


async def test_local_socket_is_private_and_refuses_garbage(ptyd: Ptyd, tmp_path: Path) -> None:
    """The Unix-socket transport: a 0600 socket in the runtime dir; a malformed frame
    gets an error reply, a frame longer than allowed ends that connection only, and
    ptyd goes on serving both transports."""
    with trio.fail_after(30):
        sid = await spawn(ptyd, tmp_path, ASKER)
        path = paths_of(ptyd).runtime_dir / LOCAL_STREAM_FILE
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o600

        def probe() -> tuple[list[object], bytes]:
            decoder = msgspec.msgpack.Decoder(contract.FromPtyd)
            answers: list[object] = []
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(5)
                sock.connect(str(path))
                for body in (
                    b"\xc1garbage",
                    DEEP_PING,
                    msgspec.msgpack.encode({"t": "input", "data": b"x"}),  # not attached
                    msgspec.msgpack.encode({"t": "hello", "sessionId": "repo1::/x@@00000000"}),
                ):
                    sock.sendall(struct.pack(">I", len(body)) + body)
                    (size,) = struct.unpack(">I", _recv_exactly(sock, 4))
                    answers.append(decoder.decode(_recv_exactly(sock, size)))
                sock.sendall(struct.pack(">I", 2**31) + b"x")  # over the frame limit
                end = sock.recv(1)  # ptyd closes this connection: EOF
            return answers, end

        answers, end = await trio.to_thread.run_sync(probe)
        assert [a.code for a in answers if isinstance(a, contract.StreamError)] == [
            "bad_request",
            "bad_request",
            contract.NOT_ATTACHED,
            "not_found",
        ]
        assert end == b""
        clients = [Client(ptyd, sid, kind=LocalTerminalStream), Client(ptyd, sid)]
        try:
            clients[0].stream.write(b"still\r")
            for client in clients:
                await client.until(b"CMD:b'still\\r'")
            rows = (await ptyd.call("term.list", {}))["sessions"]
            assert rows[0]["subscribers"] == 2
        finally:
            for client in clients:
                client.close()


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    got = b""
    while len(got) < size:
        data = sock.recv(size - len(got))
        assert data, "connection closed"
        got += data
    return got


BIG_FLOOD = r"""
import base64, os, random, sys, tty
tty.setraw(0)  # no output processing: the bytes arrive as written
os.write(1, b"READY\r\n")
os.read(0, 1)
sys.stdout.buffer.write(base64.b64encode(random.Random(14).randbytes(3 * 1024 * 1024)))
sys.stdout.buffer.write(b"END-OF-FLOOD")
sys.stdout.flush()
os.read(0, 1)
"""


async def test_the_local_stream_delivers_every_byte_in_order(ptyd: Ptyd, tmp_path: Path) -> None:
    """4 MB through the Unix-socket transport, read as fast as it comes: what the client
    accepts (before its query filter) has the sha256 of what the program wrote."""
    expected = base64.b64encode(random.Random(14).randbytes(3 * 1024 * 1024)) + b"END-OF-FLOOD"
    with trio.fail_after(60):
        sid = await spawn(ptyd, tmp_path, BIG_FLOOD)
        stream, screen = await trio.to_thread.run_sync(
            lambda: LocalTerminalStream.open(sid, paths_of(ptyd))
        )
        accepted = bytearray(b"READY\r\n" if b"READY" in screen else b"")
        accept = stream.cursor.accept

        def recording(offset: int, data: bytes) -> bytes | None:
            fresh = accept(offset, data)
            accepted.extend(fresh or b"")
            return fresh

        stream.cursor.accept = recording  # type: ignore[method-assign]

        def pump(needle: bytes) -> None:
            deadline = time.monotonic() + PUMP_DEADLINE_S
            while needle not in accepted[-64:]:
                assert time.monotonic() < deadline, bytes(accepted[-64:])
                stream.poll_output(200)

        try:
            await trio.to_thread.run_sync(pump, b"READY\r\n")
            del accepted[:]
            stream.write(b"g")
            await trio.to_thread.run_sync(pump, b"END-OF-FLOOD")
            stream.write(b"q")
        finally:
            stream.close()
        assert len(accepted) == len(expected)
        assert hashlib.sha256(accepted).hexdigest() == hashlib.sha256(expected).hexdigest()
