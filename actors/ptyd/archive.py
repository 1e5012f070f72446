"""Ended sessions' history: kept across ``orca down``, crashes and reboots, within a budget.

Essay: why the history of an ended session outlives every process.

Issue 13: an agent's output is the user's record of what it did. Before, a session's
journal was reachable only through its live session, so ``orca down``, a ``kill -9`` of
the whole tree or a reboot made it unreachable and the next ``ptyd`` deleted it. Now
the journal directory (``paths.terminal_history_dir``, under the *data* dir, never the
runtime dir) holds, per session, the raw journal, the model checkpoint and the
session's description (``<h>.info.json``, rewritten on spawn, resize, re-key and exit).
When ``ptyd`` starts, every journal whose session it did not re-adopt from the keeper
becomes an :class:`EndedSession` here: listed by ``term.list {history: true}``, readable
by ``term.read`` (the scrollback rebuilt from the journal) and ``term.attach`` (the final
screen from the model checkpoint plus the journal after it, and the exit code), removed
by ``term.close`` like any session. Its fate is what the files say:

* ``exited``: the description holds the exit code (the session ended before ptyd did);
* ``lost``: no exit was recorded - ptyd and the keeper died while it ran (a reboot, a
  ``kill -9`` of everything); its output up to the crash is still there.

The budget (:class:`HistoryBudget`, ``config/ptyd.toml``): ended sessions' history is
bounded in total bytes on disk and in age; the oldest end goes first. Candidates are
only journals whose session has ended (archived, or in the table with its child exited
and output done): a running session's history is never a candidate, whatever the
budget says. Nothing here reads a journal until a client asks (a read replays at most
``history_bytes``, a few ms), and a few rebuilt sessions are cached.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import msgspec
import trio

from actors.ptyd.history import (
    META_SUFFIX,
    MODEL_SUFFIX,
    history_bytes_on_disk,
    history_stem,
    load_info,
    load_segments,
    read_journal,
    remove_history,
)
from actors.ptyd.info import SessionInfo, info_from_disk
from actors.ptyd.osc import OscScanner
from actors.ptyd.scrollback import Chunk, Gap, OffsetInFuture, Scrollback
from actors.ptyd.sessions import rebuild_model
from orca.contracts import ptyd as contract
from orca.fsio import remove_orphan_temps, write_atomic
from orca.model.panes import parse_pty_session_id
from orca.wire.errors import BadRequest

log = logging.getLogger(__name__)

# Rebuilt (scrollback, screen) pairs kept in memory: an attach then a read of the same
# ended session replays its journal once.
_CACHE_ENTRIES = 4


@dataclass(frozen=True)
class HistoryBudget:
    """How much ended sessions' history is kept on disk (``config/ptyd.toml``)."""

    max_bytes: int
    max_age_s: float


@dataclass(frozen=True)
class Candidate:
    """One ended session's history as the budget sees it."""

    key: str
    ended_at: float
    size: int


def plan_eviction(candidates: Iterable[Candidate], budget: HistoryBudget, now: float) -> list[str]:
    """Keys to delete, oldest end first: every one older than ``max_age_s``, then the
    oldest until the rest fit in ``max_bytes``. Pure: the caller passes only ended
    sessions (a running one is never a candidate)."""
    ordered = sorted(candidates, key=lambda c: (c.ended_at, c.key))
    evict: list[str] = []
    total = sum(c.size for c in ordered)
    for c in ordered:
        if now - c.ended_at > budget.max_age_s or total > budget.max_bytes:
            evict.append(c.key)
            total -= c.size
    return evict


@dataclass
class EndedSession:
    """A session known only from its files: its process ended before this ptyd started."""

    info: SessionInfo
    ended_at: float
    lost: bool  # no exit recorded: ptyd and the keeper died while it ran
    end_offset: int | None = None  # None until known (lost: counted on first listing)
    lost_at: float | None = None  # lost: when a ptyd's start first found it so

    @property
    def key(self) -> str:
        return self.info.history_key or self.info.session_id

    @property
    def state(self) -> str:
        return "lost" if self.lost else "exited"


@dataclass
class _Rebuilt:
    scrollback: Scrollback
    screen: bytes


def _placeholder_info(key: str, created_at: float) -> SessionInfo:
    """What is known of a journal without a description (written before issue 13)."""
    parts = parse_pty_session_id(key)
    return SessionInfo(
        session_id=key,
        worktree_id=parts.worktree_id if parts is not None else "",
        pane_key="",
        tab_id="",
        argv=[],
        cwd="",
        pid=0,
        cols=80,
        rows=24,
        launch_token_sha256="",
        created_at=created_at,
        history_key=key,
    )


# The lost sessions a ptyd's start has found (history key -> when): `orca up` names the
# ones found by the start it made, so a reboot's lost agents are offered once.
LOST_NOTED_NAME = "lost-noted.json"


class HistoryArchive:
    """The ended sessions on disk, by session id (also by history key)."""

    def __init__(self, directory: Path, scrollback_bytes: int) -> None:
        self.directory = directory
        self._scrollback_bytes = scrollback_bytes
        self._ended: dict[str, EndedSession] = {}
        self._by_key: dict[str, str] = {}  # history key -> session id
        self._cache: OrderedDict[str, _Rebuilt] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ended)

    def sessions(self) -> list[EndedSession]:
        return sorted(self._ended.values(), key=lambda e: e.ended_at)

    def load(self, live_keys: set[str]) -> int:
        """Take in every journal on disk whose key is not in ``live_keys``; journals whose
        meta cannot be read (no key: unreachable) are deleted. Returns how many were taken."""
        if not self.directory.is_dir():
            return 0
        taken = 0
        for meta_path in self.directory.glob("*" + META_SUFFIX):
            stem = Path(str(meta_path)[: -len(META_SUFFIX)])
            key = _meta_key(meta_path)
            if key is None:
                remove_history(stem)
                remove_orphan_temps(self.directory, meta_path.name)
                continue
            if key in live_keys or key in self._by_key or history_stem(self.directory, key) != stem:
                continue
            self._add(_entry(key, stem, meta_path))
            taken += 1
        self._note_lost()
        return taken

    def _note_lost(self) -> None:
        """When each lost session was first found lost (``LOST_NOTED_NAME``): the start
        that found it is the one `orca up` names it at, once, not every start after."""
        path = self.directory / LOST_NOTED_NAME
        try:
            raw = json.loads(path.read_bytes())
            noted = raw if isinstance(raw, dict) else {}
        except (OSError, ValueError):
            noted = {}
        now = time.time()
        current: dict[str, float] = {}
        for entry in self._ended.values():
            if entry.lost:
                at = noted.get(entry.key)
                entry.lost_at = float(at) if isinstance(at, int | float) else now
                current[entry.key] = entry.lost_at
        if current != noted:
            try:
                write_atomic(path, json.dumps(current).encode())
            except OSError as exc:  # the next start names them again: nothing is lost
                log.warning("cannot note the lost sessions (%s): %s", path, exc)

    def _add(self, entry: EndedSession) -> None:
        self._ended[entry.info.session_id] = entry
        self._by_key[entry.key] = entry.info.session_id

    def find(self, session_id: str) -> EndedSession | None:
        """The ended session ``session_id`` names (its id or its history key)."""
        found = self._ended.get(session_id)
        if found is not None:
            return found
        by_key = self._by_key.get(session_id)
        return self._ended.get(by_key) if by_key is not None else None

    def remove(self, session_id: str) -> EndedSession | None:
        """Delete an ended session's history (``term.close``, or the budget)."""
        entry = self.find(session_id)
        if entry is None:
            return None
        del self._ended[entry.info.session_id]
        self._by_key.pop(entry.key, None)
        self._cache.pop(entry.key, None)
        remove_history(history_stem(self.directory, entry.key))
        return entry

    # -- the budget ---------------------------------------------------------------------
    def candidates(self, table_ended: Iterable[tuple[str, float]]) -> list[Candidate]:
        """Every ended history: ours, plus the table's ended sessions (key, ended at)."""
        out = [
            Candidate(e.key, e.ended_at, history_bytes_on_disk(history_stem(self.directory, e.key)))
            for e in self._ended.values()
        ]
        for key, ended_at in table_ended:
            size = history_bytes_on_disk(history_stem(self.directory, key))
            out.append(Candidate(key, ended_at, size))
        return out

    # -- replies ------------------------------------------------------------------------
    def _build(self, entry: EndedSession) -> _Rebuilt:
        """Replay the journal into a scrollback and a model (touches no shared state: it
        runs in a worker thread - a 4 MiB journal takes a few hundred ms)."""
        scrollback = Scrollback(self._scrollback_bytes)
        replay = read_journal(self.directory, entry.key)
        if replay is None:
            return _Rebuilt(scrollback, b"")
        stripped = OscScanner().feed(replay.raw).output
        scrollback.restore(replay.start.stripped, stripped)
        stem = history_stem(self.directory, entry.key)
        model = rebuild_model(
            entry.info, Path(f"{stem}{MODEL_SUFFIX}"), replay.start.stripped, stripped
        )
        model.take_replies()  # an ended session answers nothing
        return _Rebuilt(scrollback, model.snapshot())

    async def prepare(self, entry: EndedSession) -> None:
        """Rebuild ``entry`` in a worker thread unless cached, so that the replies below
        do not replay on the loop (callers that cannot await get it built inline)."""
        if entry.key not in self._cache:
            self._remember(entry, await trio.to_thread.run_sync(self._build, entry))

    def _rebuilt(self, entry: EndedSession) -> _Rebuilt:
        cached = self._cache.get(entry.key)
        if cached is not None:
            self._cache.move_to_end(entry.key)
            return cached
        return self._remember(entry, self._build(entry))

    def _remember(self, entry: EndedSession, rebuilt: _Rebuilt) -> _Rebuilt:
        entry.end_offset = rebuilt.scrollback.end
        self._cache[entry.key] = rebuilt
        while len(self._cache) > _CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return rebuilt

    def measure_lost(self) -> None:
        """Count the exact end offset of every lost session (no exit record held it):
        run in a worker thread after ``load``; until then rows show an upper bound."""
        for entry in list(self._ended.values()):
            if entry.lost and entry.end_offset is None:
                entry.end_offset = _journal_end(self.directory, entry.key)

    def read_reply(
        self, entry: EndedSession, since: int | None, limit: int | None
    ) -> contract.ReadResult:
        """``term.read`` of an ended session: its scrollback as rebuilt from the journal."""
        scrollback = self._rebuilt(entry).scrollback
        limit = min(limit or contract.MAX_READ_BYTES, contract.MAX_READ_BYTES)
        gap = False
        result: Chunk | Gap
        if since is None:
            result = scrollback.snapshot()
        else:
            try:
                result = scrollback.read_since(since, limit)
            except OffsetInFuture as exc:
                raise BadRequest(str(exc)) from None
        if isinstance(result, Gap):
            gap = True
            result = scrollback.snapshot()
        return contract.ReadResult(
            session_id=entry.info.session_id,
            offset=result.offset,
            data=result.data,
            end=scrollback.end,
            gap=gap,
            running=False,
            exit_code=entry.info.exit_code,
            output_ended=True,
        )

    def attach_reply(self, entry: EndedSession, epoch: str, seq: int) -> contract.AttachResult:
        """``term.attach`` of an ended session: its final screen and exit code; nothing
        will follow (``running`` false, ``outputEnded`` true, no lease)."""
        rebuilt = self._rebuilt(entry)
        end = rebuilt.scrollback.end
        return contract.AttachResult(
            session_id=entry.info.session_id,
            offset=end,
            data=rebuilt.screen,
            end=end,
            gap=False,
            running=False,
            exit_code=entry.info.exit_code,
            output_ended=True,
            epoch=epoch,
            seq=seq,
            topics=[],
        )

    def row(self, entry: EndedSession) -> contract.SessionRow:
        """The ``term.list`` row: ``archived``, and ``lost`` when its end was not seen."""
        end = entry.end_offset
        if end is None:  # lost, not measured yet (measure_lost): an upper bound
            end = _journal_end_bound(self.directory, entry.key)
        row = entry.info.to_row(contract.SessionRow, end, 0)
        return msgspec.structs.replace(
            row, archived=True, lost=entry.lost, ended_at=entry.ended_at, lost_at=entry.lost_at
        )


def _entry(key: str, stem: Path, meta_path: Path) -> EndedSession:
    """What the files at ``stem`` say of the session ``key``."""
    record = load_info(stem)
    disk = info_from_disk(record) if record is not None else None
    try:
        newest = max(p.stat().st_mtime for p in stem.parent.glob(stem.name + ".*"))
    except (OSError, ValueError):
        newest = time.time()
    if disk is None:
        info, ended_at, end_offset = _placeholder_info(key, newest), None, None
    else:
        info, ended_at, end_offset = disk.info, disk.ended_at, disk.end_offset
    info.history_key = info.history_key or key
    lost = info.exit_code is None
    if lost:
        info.exit_code = -1  # unknown: its end was never seen
        end_offset = None  # the description predates the last output
    return EndedSession(
        info=info,
        ended_at=newest if ended_at is None else ended_at,  # lost: its last sign of life
        lost=lost,
        end_offset=end_offset,
    )


def _journal_end_bound(directory: Path, key: str) -> int:
    """An upper bound of a journal's stripped end offset without reading it: the last
    segment's stripped start plus its raw size (stripping only removes bytes)."""
    stem = history_stem(directory, key)
    segments = load_segments(stem, key)
    if not segments:
        return 0
    try:
        size = os.stat(f"{stem}.{segments[-1].file}").st_size
    except OSError:
        size = 0
    return segments[-1].stripped + size


def _journal_end(directory: Path, key: str) -> int:
    """The stripped-stream end offset of a journal (replays it: only for lost sessions)."""
    replay = read_journal(directory, key)
    if replay is None:
        return 0
    return replay.start.stripped + len(OscScanner().feed(replay.raw).output)


def _meta_key(meta_path: Path) -> str | None:
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        return None
    key = meta.get("key") if isinstance(meta, dict) else None
    return key if isinstance(key, str) and key else None
