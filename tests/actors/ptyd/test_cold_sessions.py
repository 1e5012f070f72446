"""Cold sessions (issue 24, ptyd RSS): a session idle for ``cold_after_s`` frees its
terminal model (kept as a compressed checkpoint) and moves its compacted scrollback to
``<h>.cold`` beside the journal. A real ptyd, a real program: what ``term.read`` and
``term.attach`` give is byte-for-byte what they gave before, and the next output warms
the session again (the spill file goes, the offsets go on)."""

from __future__ import annotations

import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio
from support.actors import EventTap, RunningActor, actor_tap, running_actor
from support.dirwatch import until_names

from actors.ptyd.history import SPILL_SUFFIX
from actors.ptyd.terminal_model import TerminalModel
from orca.contracts import ptyd
from orca.paths import resolve_paths

COLD_AFTER_S = 2.5  # the shortest a session may idle before it goes cold is 2 s
# Colours, a title, enough lines to scroll, the alternate screen with a status line;
# then it echoes what it reads.
DRAW = r"""
import sys
w = sys.stdout.write
w('\x1b]2;cold-title\x07')
for i in range(300):
    w(f'\x1b[38;5;{i % 200}mline {i}\x1b[0m \x1b[1mbold\x1b[0m\r\n')
w('\x1b[?1049h\x1b[2J\x1b[H\x1b[44;97m top \x1b[0m\x1b[24;1Hstatus\x1b[3;3HDRAWN')
sys.stdout.flush()
for line in sys.stdin:
    w('GOT ' + line.strip() + '\r\n'); sys.stdout.flush()
"""


async def _until_spill_file(history_dir: Path, present: bool) -> None:
    """Until a ``.cold`` file is (or no longer is) in the history dir."""
    await until_names(
        history_dir, lambda names: any(n.endswith(SPILL_SUFFIX) for n in names) == present
    )


async def _read_all(pt: RunningActor, tap: EventTap, sid: str, until: bytes) -> bytes:
    """The stream from offset 0 until it holds ``until`` (a read that brought nothing
    waits for an event: output or heartbeat)."""
    data = b""
    while until not in data:
        reply = await pt.call("term.read", {"sessionId": sid, "since": len(data)})
        assert not reply["gap"]
        data += reply["data"]
        if not reply["data"]:
            await tap.receive()
    return data


async def _cold_sessions(pt: RunningActor) -> int:
    return int((await pt.call("sys.stats"))["ptyd"]["coldSessions"])


async def _until_cold_sessions(pt: RunningActor, count: int) -> None:
    """Until ptyd counts ``count`` cold sessions. Nothing announces a model going cold
    (no event, no file: the scrollback was spilled the first time), so its stats are
    asked every 0.1 s, under the caller's deadline."""
    while await _cold_sessions(pt) != count:  # noqa: ASYNC110 - no event to await
        await trio.sleep(0.1)


@asynccontextmanager
async def _one_session(
    tmp_path: Path, program: str, topic: str
) -> AsyncIterator[tuple[RunningActor, EventTap, str, Path]]:
    """A ptyd whose sessions go cold after ``COLD_AFTER_S``, a tap of ``topic``, and
    ``program`` spawned in it: (ptyd, tap, session id, the history dir)."""
    home = tmp_path / "home"
    history = resolve_paths({"ORCA_HOME": str(home)}).terminal_history_dir
    env = {"ORCA_PTYD_COLD_AFTER_S": str(COLD_AFTER_S)}
    async with running_actor("ptyd", home, env) as pt, trio.open_nursery() as nursery:
        tap = actor_tap(home, ptyd.CONTRACT, topics=[topic])
        await tap.start(nursery)
        spawned = await pt.call(
            "term.spawn",
            {"argv": [sys.executable, "-c", program], "cwd": "/", "worktreeId": "r::/w"},
        )
        yield pt, tap, spawned["sessionId"], history
        tap.close()
        nursery.cancel_scope.cancel()


async def _reads_as_before_when_cold(
    pt: RunningActor, sid: str, before: bytes, warm_screen: bytes
) -> bytes:
    """The session is cold: ``term.read`` gives ``before`` (the scrollback read packed:
    still cold), ``term.attach`` the warm screen (the model restored from its
    checkpoint), and with no output the model is freed again. The cold screen."""
    assert await _cold_sessions(pt) == 1
    cold_read = await pt.call("term.read", {"sessionId": sid, "since": 0})
    assert (cold_read["offset"], cold_read["data"]) == (0, before)
    assert await _cold_sessions(pt) == 1  # the scrollback is read packed
    cold_screen = bytes((await pt.call("term.attach", {"sessionId": sid}))["data"])
    assert cold_screen == warm_screen  # the model restored from its checkpoint
    assert await _cold_sessions(pt) == 0
    await _until_cold_sessions(pt, 1)  # no output came: freed again
    return cold_screen


async def test_a_cold_session_reads_and_attaches_as_before_and_warms_on_output(
    tmp_path: Path,
) -> None:
    with trio.fail_after(60):
        async with _one_session(tmp_path, DRAW, ptyd.OUTPUT.type) as (pt, tap, sid, history):
            before = await _read_all(pt, tap, sid, b"DRAWN")
            warm_screen = (await pt.call("term.attach", {"sessionId": sid}))["data"]

            await _until_spill_file(history, present=True)
            [spilled] = history.glob("*" + SPILL_SUFFIX)
            assert stat.S_IMODE(spilled.stat().st_mode) == 0o600
            cold_screen = await _reads_as_before_when_cold(pt, sid, before, warm_screen)

            await pt.call("term.write", {"sessionId": sid, "text": "again\n"})
            after = await _read_all(pt, tap, sid, b"GOT again")
            assert after.startswith(before)  # the offsets went on
            await _until_spill_file(history, present=False)  # warm: the file is gone

    shown = TerminalModel(80, 24)
    shown.feed(cold_screen)
    state = shown.screen_state()
    assert state.title == "cold-title" and state.modes.alt_screen
    assert "DRAWN" in "".join(text for text, _style in state.cells[2])


async def test_an_ended_session_kept_for_its_pane_rests_cold(tmp_path: Path) -> None:
    """An agent's terminal that ended stays in ptyd for its pane (its final screen, its
    scrollback) until closed: ``cold_after_s`` after the end its model is freed and its
    scrollback spilled, as an idle session's; a read of the final screen restores the
    model and the session goes cold again; closing it ends its rest."""
    ended = DRAW.split("for line in sys.stdin")[0]  # draws, then exits
    with trio.fail_after(60):
        async with _one_session(tmp_path, ended, ptyd.EXIT.type) as (pt, tap, sid, history):
            await tap.next_of(ptyd.EXIT, lambda e: e.session_id == sid)
            warm_screen = (await pt.call("term.attach", {"sessionId": sid}))["data"]
            before = (await pt.call("term.read", {"sessionId": sid, "since": 0}))["data"]
            assert await _cold_sessions(pt) == 0

            await _until_spill_file(history, present=True)
            await _reads_as_before_when_cold(pt, sid, before, warm_screen)
            assert (await pt.call("term.attach", {"sessionId": sid}))["data"] == warm_screen

            await pt.call("term.close", {"sessionId": sid})
            assert (await pt.call("sys.stats"))["ptyd"]["sessions"] == 0
