"""The ptyd actor as a real process, over its real sockets (issue 6: ops, attach, GC)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from support.ptyd_harness import PtydProcess as Ptyd
from support.ptyd_harness import collect_output, running_ptyd

from orca.client.cursor import StreamCursor
from orca.client.terminal import Attachment
from orca.contracts import ptyd as contract
from orca.contracts import sys as sys_contract
from orca.wire.errors import BadRequest, NotFound

WT = "repo1::/tmp/wt-known"


@pytest.fixture
async def ptyd(tmp_path: Path) -> AsyncIterator[Ptyd]:
    async with running_ptyd(tmp_path / "home") as p:
        yield p


async def test_spawn_attach_write_and_read_over_the_wire(ptyd: Ptyd, tmp_path: Path) -> None:
    """A shell spawned by RPC echoes input as output events with contiguous offsets."""
    with trio.fail_after(20):
        spawned = await ptyd.call(
            "term.spawn", {"argv": ["/bin/sh"], "cwd": str(tmp_path), "worktreeId": WT}
        )
        sid = spawned["sessionId"]
        assert sid.startswith(WT + "@@") and len(spawned["launchTokenSha256"]) == 64
        tap = await ptyd.tap([contract.output_topic(sid), contract.exit_topic(sid)])
        attached = await ptyd.call("term.attach", {"sessionId": sid})
        cursor = StreamCursor(attached["end"])  # data is the screen, as of end
        await ptyd.call("term.write", {"sessionId": sid, "text": "echo wire-$((6*7))\n"})
        assert b"wire-42" in await collect_output(tap, sid, cursor, ptyd, b"wire-42")
        read = await ptyd.call("term.read", {"sessionId": sid, "since": 0})
        # The prompt after the echo may land between the event and the read: the
        # read covers every byte the live events delivered, in the same offsets.
        assert b"wire-42" in read["data"] and read["end"] >= cursor.offset
        assert read["offset"] + len(read["data"]) == read["end"]
        await ptyd.call("term.write", {"sessionId": sid, "text": "exit 5\n"})
        exit_event = await tap.next_of(contract.EXIT)
        assert exit_event.exit_code == 5
        rows = (await ptyd.call("term.list"))["sessions"]
        assert [(r["sessionId"], r["running"], r["exitCode"]) for r in rows] == [(sid, False, 5)]


async def test_bad_requests_are_refused_and_actor_keeps_serving(ptyd: Ptyd, tmp_path: Path) -> None:
    """Unknown sessions, bad worktree ids and missing executables get clear errors."""
    with trio.fail_after(20):
        with pytest.raises(NotFound):
            await ptyd.call("term.write", {"sessionId": "nope", "text": "x"})
        with pytest.raises(BadRequest):
            await ptyd.call("term.spawn", {"argv": ["/bin/sh"], "cwd": "/", "worktreeId": "bad"})
        with pytest.raises(BadRequest):
            await ptyd.call(
                "term.spawn", {"argv": ["no-such-binary-x"], "cwd": "/", "worktreeId": WT}
            )
        assert (await ptyd.call("term.list")) == {"sessions": []}


async def test_osc_is_stripped_even_with_hooks_down(ptyd: Ptyd, tmp_path: Path) -> None:
    """With no hooks actor running, OSC 9999 output is still stripped and output flows."""
    with trio.fail_after(20):
        script = r"""printf 'a\033]9999;{"state":"done"}\007b\n'; read x"""
        spawned = await ptyd.call(
            "term.spawn", {"argv": ["/bin/sh", "-c", script], "cwd": "/", "worktreeId": WT}
        )
        sid = spawned["sessionId"]
        tap = await ptyd.tap([contract.output_topic(sid)])
        reply = await ptyd.call("term.read", {"sessionId": sid})
        cursor = StreamCursor(reply["offset"])
        seen = cursor.accept(reply["offset"], reply["data"]) or b""
        if b"ab" not in seen:
            seen += await collect_output(tap, sid, cursor, ptyd, b"ab")
        assert b"ab\r\n" in seen and b"9999" not in seen


async def test_registered_ops_equal_the_contract(ptyd: Ptyd) -> None:
    """ptyd serves exactly the ops of orca.contracts.ptyd (plus the built-in sys.* ops)."""
    with trio.fail_after(20):
        hello = await ptyd.client.invoke(sys_contract.HELLO, timeout=10)
    assert set(hello.capabilities) == set(contract.CONTRACT.ops) | set(sys_contract.CONTRACT.ops)


async def test_every_op_and_event_has_its_contracts_shape(ptyd: Ptyd, tmp_path: Path) -> None:
    """Each op's reply decodes as its declared result (typed invoke), each event published
    decodes as its declared Struct, and a size the contract bounds is refused."""
    c = ptyd.client
    with trio.fail_after(30):
        tap = await ptyd.tap(["term."])  # live (a heartbeat came) before the first event
        spawn = contract.SpawnArgs(argv=["/bin/sh"], cwd=str(tmp_path), worktree_id=WT)
        spawned = await c.invoke(contract.SPAWN, spawn, timeout=10)
        sid = spawned.session_id
        one = contract.SessionArgs(session_id=sid)
        text = "echo typed\n"
        written = await c.invoke(contract.WRITE, contract.WriteArgs(session_id=sid, text=text))
        assert written.queued == len(text)
        resize = contract.ResizeArgs(session_id=sid, cols=100, rows=30)
        assert await c.invoke(contract.RESIZE, resize) == contract.Empty()
        with pytest.raises(BadRequest):
            await ptyd.call("term.resize", {"sessionId": sid, "cols": 0, "rows": 30})
        listed = await c.invoke(contract.LIST, contract.ListArgs(worktree_id=WT))
        assert [(r.session_id, r.cols, r.running) for r in listed.sessions] == [(sid, 100, True)]
        read = await c.invoke(contract.READ, contract.ReadArgs(session_id=sid, since=0))
        assert read.session_id == sid and not read.gap and read.exit_code is None
        attached = await c.invoke(contract.ATTACH, contract.AttachArgs(session_id=sid))
        assert attached.topics == [contract.output_topic(sid), contract.exit_topic(sid)]
        snapshot = await c.invoke(contract.SNAPSHOT)
        assert snapshot.epoch == attached.epoch and snapshot.sessions[0].session_id == sid
        assert (await c.invoke(contract.GC_STATUS)).suspects == {}
        signalled = await c.invoke(
            contract.SIGNAL, contract.SignalArgs(session_id=sid, signal="CONT")
        )
        assert signalled.delivered is True
        assert await c.invoke(contract.KILL, one) == contract.Empty()
        closed = await c.invoke(contract.CLOSE, one, timeout=10)
        assert closed == contract.CloseResult(fenced=False, store_revision=None)  # no peers
        seen: dict[str, object] = {}
        while not {contract.CLOSED.type, contract.EXIT.type} <= set(seen):
            got = await tap.receive()
            if got.data is not None:
                seen[got.envelope.type] = got.data
        tap.check()  # nothing published outside the contract, nothing malformed
    assert set(seen) == {"term.spawned", "term.output", "term.resized", "term.exit", "term.closed"}
    assert seen["term.resized"] == contract.SessionResized(session_id=sid, cols=100, rows=30)
    row = seen["term.spawned"]
    assert isinstance(row, contract.SessionSpawned) and row.session_id == sid
    assert (row.pane_key, row.pid, row.cols, row.running) == (
        spawned.pane_key,
        spawned.pid,
        80,
        True,
    )


async def _subscribers(ptyd: Ptyd, sid: str) -> int:
    [row] = (await ptyd.client.invoke(contract.LIST, contract.ListArgs())).sessions
    assert row.session_id == sid
    return row.subscribers


async def test_subscribers_counts_attached_clients_by_lease(ptyd: Ptyd, tmp_path: Path) -> None:
    """Issue 15 item 8: ``subscribers`` was always 0 while a client was attached. An
    attachment that names itself holds a lease: counted until it detaches; a plain
    screen read (no attachment id) counts nothing."""
    c = ptyd.client
    with trio.fail_after(30):
        spawn = contract.SpawnArgs(argv=["/bin/sh"], cwd=str(tmp_path), worktree_id=WT)
        sid = (await c.invoke(contract.SPAWN, spawn, timeout=10)).session_id
        await c.invoke(contract.ATTACH, contract.AttachArgs(session_id=sid))
        assert await _subscribers(ptyd, sid) == 0

        # The blocking client `orca term attach` uses: open attaches with a lease.
        attachment = await trio.to_thread.run_sync(Attachment.open, sid, ptyd.paths)
        assert attachment.lease_s == contract.ATTACH_LEASE_S
        assert await _subscribers(ptyd, sid) == 1
        second = contract.LeaseArgs(session_id=sid, attachment_id="second-client")
        assert (await c.invoke(contract.LEASE, second)).lease_s == contract.ATTACH_LEASE_S
        assert await _subscribers(ptyd, sid) == 2
        await c.invoke(contract.LEASE, second)  # a renewal is not a new client
        assert await _subscribers(ptyd, sid) == 2

        await trio.to_thread.run_sync(attachment.close)
        assert await _subscribers(ptyd, sid) == 1
        assert await c.invoke(contract.DETACH, second) == contract.Empty()
        assert await _subscribers(ptyd, sid) == 0
        with pytest.raises(NotFound):
            gone = contract.LeaseArgs(session_id="repo1::/nope@@00000000", attachment_id="x")
            await c.invoke(contract.LEASE, gone)
        with pytest.raises(BadRequest):  # an attachment id is bounded
            await ptyd.call("term.lease", {"sessionId": sid, "attachmentId": "x" * 65})
