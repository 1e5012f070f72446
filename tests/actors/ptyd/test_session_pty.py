"""PTY sessions with real child processes (issue 6: sessions, output, OSC, exit)."""

from __future__ import annotations

import hashlib
import signal
import sys

import pytest
import trio
from support.ptyd_harness import Harness, read_until

from actors.ptyd.scrollback import Gap
from actors.ptyd.session import MAX_INPUT_BACKLOG, InputBacklogFull, SessionEnded
from orca.client.cursor import StreamCursor


async def test_shell_session_driven_by_input_is_read_back(harness: Harness) -> None:
    """Input written to /bin/sh is executed and its output read back."""
    with trio.fail_after(10):
        session = harness.start(["/bin/sh"])
        session.write_nowait(b"echo hello-$((40+2))\n")
        assert b"hello-42" in await read_until(session, b"hello-42")
        session.write_nowait(b"exit 3\n")
        await session.exited.wait()
        assert session.info.exit_code == 3


async def test_osc_sequences_from_child_are_stripped_and_surfaced(harness: Harness) -> None:
    """An OSC 9999 emitted by the child never reaches the output; its payload is reported."""
    with trio.fail_after(10):
        script = r"""printf 'before\033]9999;{"state":"working"}\007after\n'"""
        session = harness.start(["/bin/sh", "-c", script])
        await session.output_done.wait()
        out = session.scrollback.snapshot().data
        assert b"beforeafter" in out
        assert b"9999" not in out
        assert harness.listener.payloads == [b'{"state":"working"}']


async def test_exit_status_delivered_for_code_and_signal(harness: Harness) -> None:
    """A child's exit code, or 128+signal when killed, is recorded and reported."""
    with trio.fail_after(10):
        coded = harness.start(["/bin/sh", "-c", "exit 7"])
        sleeper = harness.start(["/bin/sleep", "30"])
        await coded.exited.wait()
        assert sleeper.send_signal(signal.SIGKILL)
        await sleeper.exited.wait()
        assert (coded.info.exit_code, sleeper.info.exit_code) == (7, 128 + 9)
        assert sorted(harness.listener.exits) == sorted([coded.session_id, sleeper.session_id])


async def test_resize_is_visible_to_the_child(harness: Harness) -> None:
    """After resize the child's stty reports the new rows and columns."""
    with trio.fail_after(10):
        session = harness.start(["/bin/sh"], cols=80, rows=24)
        session.write_nowait(b"stty size; echo :done1\n")
        await read_until(session, b"24 80")
        session.resize(132, 43)
        start = session.scrollback.end
        session.write_nowait(b"stty size\n")
        assert b"43 132" in await read_until(session, b"43 132", start)


async def test_child_environment_carries_identity_and_token(harness: Harness) -> None:
    """ORCA_* variables are set; only the token's SHA-256 is kept by ptyd."""
    with trio.fail_after(10):
        script = (
            'echo "K=$ORCA_PANE_KEY T=$ORCA_TAB_ID W=$ORCA_WORKTREE_ID'
            ' E=$ORCA_AGENT_HOOK_ENDPOINT TERM=$TERM"; echo "TOKEN=$ORCA_AGENT_LAUNCH_TOKEN"'
        )
        session = harness.start(["/bin/sh", "-c", script])
        await session.output_done.wait()
        out = session.scrollback.snapshot().data.decode()
        info = session.info
        assert f"K={info.pane_key} T={info.tab_id} W=repo1::/tmp/wt" in out
        assert "agent-hooks/endpoint.env TERM=xterm-256color" in out
        token = out.split("TOKEN=")[1].split()[0]
        assert len(token) >= 40
        assert hashlib.sha256(token.encode()).hexdigest() == info.launch_token_sha256
        assert token not in repr(info)


async def test_slow_attached_reader_never_blocks_the_pty(harness: Harness) -> None:
    """A subscriber that never reads is marked lagged; the child runs to completion."""
    with trio.fail_after(20):
        session = harness.start(["/bin/sh", "-c", "seq 1 300000"])
        _, stalled = session.subscribe(capacity=2)
        await session.exited.wait()
        await session.output_done.wait()
        assert session.info.exit_code == 0
        assert stalled.lagged
        expected = b"".join(b"%d\r\n" % i for i in range(1, 300001))
        assert session.scrollback.end == len(expected)
        snap = session.scrollback.snapshot()
        assert expected.endswith(snap.data)
        # The stalled reader detects its gap by offset and resyncs from the snapshot.
        cursor = StreamCursor(0)
        first = stalled.receive.receive_nowait()
        assert cursor.accept(first.offset, first.data) == first.data
        later = stalled.receive.receive_nowait()
        gap_or_data = cursor.accept(later.offset, later.data)
        assert gap_or_data == later.data  # queue held 2 consecutive chunks
        assert isinstance(session.read_since(cursor.offset), Gap)


async def test_detach_and_reattach_show_the_history(harness: Harness) -> None:
    """A client attaching after output was produced gets it in the snapshot."""
    with trio.fail_after(10):
        session = harness.start(["/bin/sh"])
        session.write_nowait(b"echo first-visit\n")
        await read_until(session, b"first-visit\r\n")
        snapshot, sub = session.subscribe()
        session.unsubscribe(sub)
        assert b"first-visit" in snapshot.data
        session.write_nowait(b"echo second\n")
        again = await read_until(session, b"second\r\n")
        assert b"first-visit" in again


async def test_history_is_recorded_on_disk(harness: Harness) -> None:
    """Output is journaled on disk (through the splice path) as it is read."""
    with trio.fail_after(10):
        session = harness.start(["/bin/sh", "-c", "echo durable-line"])
        await session.output_done.wait()
        assert session.journal is not None
        replay = session.journal.replay()
        assert (replay.start.raw, replay.start.stripped) == (0, 0)
        assert replay.raw == session.scrollback.snapshot().data
        assert b"durable-line" in replay.raw


async def test_rename_rekeys_session_and_keeps_old_id_as_alias(harness: Harness) -> None:
    """A worktree rename moves sessions to the new id; the old id still resolves."""
    with trio.fail_after(10):
        session = harness.start(["/bin/sh"])
        old_id = session.session_id
        moved = harness.table.rekey_worktree("repo1::/tmp/wt", "repo1::/tmp/renamed")
        assert session.info.cwd == str(harness.tmp)  # not under the worktree: kept
        assert moved == [(old_id, session.session_id)]
        assert session.session_id.startswith("repo1::/tmp/renamed@@")
        assert session.session_id.endswith(old_id[-8:])
        assert harness.table.get(old_id) is session
        assert session.info.worktree_id == "repo1::/tmp/renamed"
        harness.table.get(old_id).write_nowait(b"echo still-alive\n")
        await read_until(session, b"still-alive\r\n")


async def test_input_to_a_child_that_never_reads_is_bounded(harness: Harness) -> None:
    """Writes never block; once the backlog bound is reached they are refused."""
    with trio.fail_after(10):
        session = harness.start(["/bin/sleep", "30"])
        chunk = b"x" * (256 * 1024)
        with pytest.raises(InputBacklogFull):
            for _ in range(MAX_INPUT_BACKLOG // len(chunk) + 2):
                session.write_nowait(chunk)
        await trio.lowlevel.checkpoint()
        assert session.send_signal(signal.SIGKILL)
        await session.exited.wait()
        with pytest.raises(SessionEnded):
            await session.output_done.wait()
            session.write_nowait(b"late")


async def test_output_nobody_follows_is_read_in_gathered_batches_whole(harness: Harness) -> None:
    """A printer nobody watches (no client, no subscriber) is read every
    ``UNWATCHED_READ_S``, not once per line: its lines arrive whole and in order, in far
    fewer batches than lines (each batch is a wake-up of ptyd: the CPU an unwatched
    agent costs). Read line by line this would be about one batch per line."""
    lines = 40
    script = f"import sys, time\nfor i in range({lines}):\n    print(f'line {{i}}', flush=True)\n    time.sleep(0.004)\n"
    with trio.fail_after(20):
        session = harness.start([sys.executable, "-c", script])
        await session.output_done.wait()
    out = session.scrollback.snapshot().data
    assert out.split(b"\r\n")[:lines] == [b"line %d" % i for i in range(lines)]
    assert harness.listener.output_events < lines / 2
