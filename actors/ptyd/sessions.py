"""The session table: spawn, look up (with rename aliases), re-key, forget.

Sessions are keyed by their PTY session id ``<worktreeId>@@<8 hex>`` (orca.model.panes).
A worktree rename (``git worktree move`` → store's identity migration → event
``worktree.renamed {old, new}``) re-keys every live session of the old worktree to
``<new>@@<same hex>`` instead of killing it (docs/protocols.md §1); the old ids stay
valid as aliases so a client holding one keeps working.

The table only spawns and indexes; running a session (its reader task) is the caller's
job, so the same table serves the actor, tests and the benchmark.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from actors.ptyd import spawn
from actors.ptyd.history import (
    DEFAULT_HISTORY_BYTES,
    RawJournal,
    history_stem,
    load_checkpoint,
    load_info,
    save_info,
)
from actors.ptyd.info import SessionInfo, info_from_disk, info_record
from actors.ptyd.osc import OscScanner
from actors.ptyd.scrollback import DEFAULT_CAPACITY, Scrollback
from actors.ptyd.session import COLD_AFTER_S, Session, SessionListener
from actors.ptyd.terminal_model import ModelError, TerminalModel
from orca.contracts.ptyd import SpawnArgs
from orca.model.ids import split_worktree_id_for_filesystem
from orca.model.panes import (
    make_pane_key,
    make_pty_session_id,
    parse_legacy_numeric_pane_key,
    parse_pane_key,
    parse_pty_session_id,
)

log = logging.getLogger(__name__)

# Output pipe capacity: one full READ_SIZE splice must fit while the pipe is empty.
_PIPE_BYTES = 64 * 1024


def new_output_pipe() -> tuple[int, int]:
    """A non-blocking close-on-exec pipe for splicing a session's output through."""
    r, w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    return r, w


class UnknownSession(KeyError):
    """No session has this id (nor had it before a rename)."""


@dataclass
class TableConfig:
    history_dir: Path | None
    hook_endpoint_file: Path
    scrollback_bytes: int = DEFAULT_CAPACITY
    history_bytes: int = DEFAULT_HISTORY_BYTES
    cold_after_s: float = COLD_AFTER_S
    base_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


def rebuild_model(
    info: SessionInfo, checkpoint: Path, start: int, stripped: bytes
) -> TerminalModel:
    """The model after a restart: its checkpoint plus the journal's tail after it, or,
    without a usable checkpoint, the whole journal replayed into a fresh model."""
    saved = load_checkpoint(checkpoint)
    end = start + len(stripped)
    if saved is not None and start <= saved[0] <= end:
        offset, data = saved
        try:
            model = TerminalModel.restore(data)
        except ModelError as exc:
            log.warning("session %s: model checkpoint unusable (%s)", info.session_id, exc)
        else:
            model.feed(stripped[offset - start :])
            if model.size != (info.cols, info.rows):
                model.resize(info.cols, info.rows)  # resized after the checkpoint
            return model
    model = TerminalModel(info.cols, info.rows)
    model.feed(stripped)
    return model


def pane_identity(worktree_id: str, pane_key: str | None) -> spawn.PaneIdentity:
    """The pane identity of a new session: the given pane key, or a fresh one."""
    if pane_key is None:
        pane_key = make_pane_key(f"term-{uuid.uuid4().hex[:12]}", str(uuid.uuid4()))
    parts = parse_pane_key(pane_key)
    if parts is not None:
        return spawn.PaneIdentity(pane_key, parts.tab_id, worktree_id)
    legacy = parse_legacy_numeric_pane_key(pane_key)
    if legacy is not None:
        return spawn.PaneIdentity(pane_key, legacy.tab_id, worktree_id)
    raise ValueError(f"not a pane key ('<tabId>:<leafUUID>'): {pane_key!r}")


def moved_path(path: str, old_worktree_id: str, new_worktree_id: str) -> str:
    """``path`` after the worktree folder of ``old`` moved to that of ``new``: rewritten
    when equal to or under the old folder, else unchanged (also for malformed ids)."""
    old = split_worktree_id_for_filesystem(old_worktree_id)
    new = split_worktree_id_for_filesystem(new_worktree_id)
    if old is None or new is None:
        return path
    old_dir, new_dir = old.path.rstrip("/") or "/", new.path.rstrip("/") or "/"
    if path.rstrip("/") == old_dir:
        return new_dir
    prefix = old_dir if old_dir.endswith("/") else old_dir + "/"
    if path.startswith(prefix):
        return new_dir.rstrip("/") + "/" + path[len(prefix) :]
    return path


class SessionTable:
    """Every session of this ptyd, by id; aliases remember ids from before a rename."""

    def __init__(self, config: TableConfig, listener: SessionListener) -> None:
        self.config = config
        self._listener = listener
        self._sessions: dict[str, Session] = {}
        self._aliases: dict[str, str] = {}
        # History key -> when its child's exit was first recorded (kept across a
        # re-adoption: read back from the description on disk).
        self._ended_at: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def spawn(self, req: SpawnArgs) -> Session:
        """Start the child and register its session (the caller runs ``session.run``).

        ``req`` is the ``term.spawn`` args Struct itself (one shape for the wire and the
        table); its size bounds are checked where it is decoded.

        Raises ValueError for a bad worktree id or pane key, spawn.SpawnFailed when
        the child cannot start.
        """
        session_id = make_pty_session_id(req.worktree_id)
        identity = pane_identity(req.worktree_id, req.pane_key)
        token = spawn.LaunchToken.fresh()
        env = spawn.child_environment(
            self.config.base_env if req.user_env is None else req.user_env,
            req.env,
            identity,
            token,
            self.config.hook_endpoint_file,
        )
        pid, master = spawn.spawn_on_pty(req.argv, req.cwd, env, req.cols, req.rows)
        token_sha256 = token.sha256
        del token, env  # the secret lives on only in the child's environment
        info = SessionInfo(
            session_id=session_id,
            worktree_id=req.worktree_id,
            pane_key=identity.pane_key,
            tab_id=identity.tab_id,
            argv=list(req.argv),
            cwd=req.cwd,
            pid=pid,
            cols=req.cols,
            rows=req.rows,
            launch_token_sha256=token_sha256,
            history_key=session_id,
            terminal_handle=f"term_{uuid.uuid4()}",
        )
        pipe = new_output_pipe() if self.config.history_dir is not None else None
        return self.adopt(info, master, pipe)

    def adopt(
        self,
        info: SessionInfo,
        master_fd: int,
        pipe: tuple[int, int] | None,
        *,
        resume_history: bool = False,
    ) -> Session:
        """Register a session for an existing child and master (spawn, or handoff).

        With ``resume_history`` the scrollback and the OSC scanner state are rebuilt
        by replaying the journal, so offsets continue exactly where they were.
        """
        journal = None
        model: TerminalModel | None = None
        scanner = OscScanner()
        if self.config.history_dir is not None:
            journal = RawJournal(
                self.config.history_dir,
                info.history_key or info.session_id,
                self.config.history_bytes,
                resume=resume_history,
            )
        spill = journal.spill_file() if journal is not None else None
        scrollback = Scrollback(self.config.scrollback_bytes, spill=spill)
        if journal is not None and resume_history:
            replay = journal.replay()
            stripped = scanner.feed(replay.raw).output
            scrollback.restore(replay.start.stripped, stripped)
            model = rebuild_model(info, journal.model_path, replay.start.stripped, stripped)
        if resume_history and info.exit_code is not None and self.config.history_dir is not None:
            self._remember_end(self.config.history_dir, info)
        session = Session(
            info,
            master_fd,
            self._listener,
            scrollback=scrollback,
            journal=journal,
            pipe=pipe,
            scanner=scanner,
            model=model,
            cold_after_s=self.config.cold_after_s,
        )
        if model is not None:
            model.take_replies()  # the queries of the replay were answered before the crash
        self._sessions[info.session_id] = session
        self.record(session)
        return session

    def record(self, session: Session) -> None:
        """Save the session's description beside its journal (spawn, resize, re-key,
        exit): what a later ptyd shows once the process is gone (``archive.py``).

        Atomic but not fsync'd, like the journal itself (history.py): an fsync costs
        ~20 ms on a loaded disk, on the loop every session is read from, and a
        description that outlived its journal's bytes would buy nothing; a clean reboot
        writes both back. A refused write is logged; the session runs on regardless."""
        directory = self.config.history_dir
        if directory is None or session.journal is None:
            return
        info = session.info
        key = info.history_key or info.session_id
        ended = self._ended_at.setdefault(key, time.time()) if info.exit_code is not None else None
        try:
            save_info(
                history_stem(directory, key),
                info_record(info, ended, session.scrollback.end),
                durable=False,
            )
        except OSError as exc:
            log.warning("session %s: description not saved (%s)", info.session_id, exc)

    def _remember_end(self, directory: Path, info: SessionInfo) -> None:
        key = info.history_key or info.session_id
        record = load_info(history_stem(directory, key))
        disk = info_from_disk(record) if record is not None else None
        if disk is not None and disk.ended_at is not None:
            self._ended_at.setdefault(key, disk.ended_at)

    def ended_at(self, session: Session) -> float | None:
        """When the session's exit was recorded (None while it runs)."""
        info = session.info
        if info.exit_code is None:
            return None
        return self._ended_at.setdefault(info.history_key or info.session_id, time.time())

    def get(self, session_id: str) -> Session:
        seen = 0
        while session_id not in self._sessions and session_id in self._aliases:
            session_id = self._aliases[session_id]
            seen += 1
            if seen > len(self._aliases):
                break
        try:
            return self._sessions[session_id]
        except KeyError:
            raise UnknownSession(session_id) from None

    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    def aliases(self) -> dict[str, str]:
        """Ids from before a rename -> the id they lead to now."""
        return dict(self._aliases)

    def forget(self, session_id: str) -> Session:
        """Remove a session from the table (after it is closed); returns it."""
        session = self.get(session_id)
        del self._sessions[session.session_id]
        self._ended_at.pop(session.info.history_key or session.session_id, None)
        self._aliases = {a: t for a, t in self._aliases.items() if t != session.session_id}
        return session

    def rekey_worktree(self, old_worktree_id: str, new_worktree_id: str) -> list[tuple[str, str]]:
        """Move every session of ``old`` to ``new``; returns (old id, new id) pairs.

        The folder moved with the id (``orca worktree mv``): a ``cwd`` equal to or under
        the old worktree path is rewritten under the new one (the child's own cwd moved
        with its directory; this keeps what ``term.list`` reports true)."""
        moved: list[tuple[str, str]] = []
        for session in list(self._sessions.values()):
            if session.info.worktree_id != old_worktree_id:
                continue
            session.info.cwd = moved_path(session.info.cwd, old_worktree_id, new_worktree_id)
            parts = parse_pty_session_id(session.session_id)
            suffix = parts.suffix if parts is not None else None
            new_id = make_pty_session_id(new_worktree_id, suffix)
            old_id = session.session_id
            del self._sessions[old_id]
            session.info.session_id = new_id
            session.info.worktree_id = new_worktree_id
            self._sessions[new_id] = session
            self._aliases[old_id] = new_id
            self.record(session)
            moved.append((old_id, new_id))
        return moved
