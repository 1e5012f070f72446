"""Op replies and error mapping of ``ptyd`` that need no actor state (``orca.contracts.ptyd``)."""

from __future__ import annotations

import msgspec

from actors.ptyd.scrollback import Chunk, Gap, OffsetInFuture
from actors.ptyd.session import InputBacklogFull, Session, SessionEnded
from actors.ptyd.spawn import SpawnFailed
from orca.contracts import ptyd as contract
from orca.model.panes import BadPtySessionId
from orca.wire.errors import BadRequest, Conflict, ErrorTable, OrcaError, Unavailable, mapped_error


def read_reply(session: Session, since: int | None, limit: int | None) -> contract.ReadResult:
    """The ``term.read`` reply: data since an offset, or the snapshot on a gap."""
    limit = min(limit or contract.MAX_READ_BYTES, contract.MAX_READ_BYTES)
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
    return contract.ReadResult(
        session_id=session.session_id,
        offset=result.offset,
        data=result.data,
        end=session.scrollback.end,
        gap=gap,
        running=not session.exited.is_set(),
        exit_code=session.info.exit_code,
        # True once the PTY hung up: ``end`` is final. The child's exit can be seen
        # before its last output is read, so a reader waits for this, not ``running``.
        output_ended=session.output_done.is_set(),
    )


def attach_reply(
    session: Session,
    epoch: str,
    seq: int,
    screen_at: tuple[int, bytes] | None = None,
    stream: str | None = None,
) -> contract.AttachResult:
    """The ``term.attach`` reply: the screen (an escape stream redrawing the terminal
    model, no query in it) as of ``offset`` == ``end``, the publisher position, the topics.
    ``screen_at``: (offset, screen) formatted beforehand (off the loop, ``stream.py``)."""
    status = read_reply(session, session.scrollback.end, 0)
    offset, screen = screen_at or session.screen_snapshot()
    fields = msgspec.structs.asdict(status) | {"offset": offset, "data": screen, "end": offset}
    return contract.AttachResult(
        **fields,
        epoch=epoch,
        seq=seq,
        topics=[contract.output_topic(session.session_id), contract.exit_topic(session.session_id)],
        stream=stream,
    )


_SESSION_ERRORS: ErrorTable = ((InputBacklogFull, Unavailable), (SessionEnded, Conflict))
_SPAWN_ERRORS: ErrorTable = (
    ((SpawnFailed, BadPtySessionId, ValueError), BadRequest),
    *_SESSION_ERRORS,
)


def map_session_errors(exc: Exception) -> OrcaError:
    return mapped_error(exc, _SESSION_ERRORS, BadRequest)


def spawn_errors(exc: Exception) -> OrcaError:
    return mapped_error(exc, _SPAWN_ERRORS, BadRequest)
