"""Op replies and argument checks of ``ptyd`` that need no actor state (``api.py``)."""

from __future__ import annotations

from actors.ptyd import api
from actors.ptyd.scrollback import Chunk, Gap, OffsetInFuture
from actors.ptyd.session import InputBacklogFull, Session, SessionEnded
from actors.ptyd.sessions import SpawnRequest
from actors.ptyd.spawn import SpawnFailed
from orca.model.panes import BadPtySessionId
from orca.wire.errors import BadRequest, Conflict, OrcaError, Unavailable


def read_reply(session: Session, since: int | None, limit: int | None) -> dict[str, object]:
    """The ``term.read`` reply: data since an offset, or the snapshot on a gap."""
    limit = min(limit or api.MAX_READ_BYTES, api.MAX_READ_BYTES)
    gap = False
    if since is None:
        result: Chunk | Gap = session.scrollback.snapshot()
    else:
        try:
            result = session.read_since(since, limit)
        except OffsetInFuture as exc:
            raise BadRequest(str(exc)) from None
    if isinstance(result, Gap):
        gap = True
        result = session.scrollback.snapshot()
    return {
        "sessionId": session.session_id,
        "offset": result.offset,
        "data": result.data,
        "end": session.scrollback.end,
        "gap": gap,
        "running": not session.exited.is_set(),
        "exitCode": session.info.exit_code,
        # True once the PTY hung up: ``end`` is final. The child's exit can be seen
        # before its last output is read, so a reader waits for this, not ``running``.
        "outputEnded": session.output_done.is_set(),
    }


def map_session_errors(exc: Exception) -> OrcaError:
    if isinstance(exc, InputBacklogFull):
        return Unavailable(str(exc))
    if isinstance(exc, SessionEnded):
        return Conflict(str(exc))
    return BadRequest(str(exc))


def spawn_request(args: api.SpawnArgs) -> SpawnRequest:
    for dim in (args.cols, args.rows):
        if not 1 <= dim <= api.MAX_DIMENSION:
            raise BadRequest(f"cols/rows must be within 1..{api.MAX_DIMENSION}")
    return SpawnRequest(
        argv=args.argv,
        cwd=args.cwd,
        worktree_id=args.worktree_id,
        cols=args.cols,
        rows=args.rows,
        env=args.env,
        pane_key=args.pane_key,
    )


def spawn_errors(exc: Exception) -> OrcaError:
    if isinstance(exc, SpawnFailed | BadPtySessionId | ValueError):
        return BadRequest(str(exc))
    return map_session_errors(exc)
