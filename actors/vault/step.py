"""One scan step on one transcript: stat, decide, read a bounded batch, parse, commit.

Runs in the vault's worker thread (never on the actor's trio loop: parsing a few MB
of JSON takes tens of milliseconds, seed 02 §11 "SQLite parser 可放 worker"). Nothing a
file contains can stop the index: a line that is not a JSON object is counted and
skipped, a line too long is dropped unbuffered (``linereader``), an unreadable file is
reported in its row and retried next scan, a vanished one is forgotten.

Files are opened ``O_NONBLOCK`` (a FIFO named like a transcript must not hang the
worker) and must be regular files; a path outside the agents' roots (a hook's
``transcript_path``) must also belong to us (``owned_only``).
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import msgspec

from actors.vault.claude import parse_claude_line
from actors.vault.codex import parse_codex_line
from actors.vault.fileplan import HEAD_BYTES, FileIdentity, head_still_same, plan_step
from actors.vault.gemini import parse_gemini_document, parse_gemini_record
from actors.vault.indexdb import IndexWriter, Transcript
from actors.vault.linereader import read_lines
from actors.vault.records import Agent, Parsed, SessionFacts

# A whole-document transcript is decoded in one piece; beyond this it is refused
# (reported) rather than held in memory.
MAX_WHOLE_BYTES = 64 * 1024 * 1024
MAX_CLEAN_DEPTH = 64

LineParser = Callable[[dict[str, Any], SessionFacts, Parsed], None]
PARSERS: dict[str, LineParser] = {
    "claude": parse_claude_line,
    "codex": parse_codex_line,
    "gemini": parse_gemini_record,
}

Outcome = Literal["unchanged", "indexed", "forgotten", "error", "absent"]


@dataclass(frozen=True, slots=True)
class Source:
    """A file to index: which agent wrote it, and how (``whole``: one JSON document)."""

    agent: Agent
    path: str
    whole: bool = False
    owned_only: bool = False


@dataclass(frozen=True, slots=True)
class StepResult:
    outcome: Outcome
    more: bool = False  # stopped at the budget: step it again soon
    consumed: int = 0
    transcript: Transcript | None = None
    error: str = ""


def decode_line(line: bytes) -> Any:
    """A JSON line as Python values, or raise ValueError. msgspec first (fast); a line
    it refuses (a lone surrogate escape, which JSON allows) goes through ``json``, and
    its strings are cleaned so SQLite can store them."""
    try:
        return msgspec.json.decode(line)
    except msgspec.DecodeError:
        pass
    except RecursionError:
        raise ValueError("nested too deep") from None
    try:
        value = json.loads(line.decode("utf-8", "replace"))
    except RecursionError:
        raise ValueError("nested too deep") from None
    return _clean(value, 0)


def _clean(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if depth > MAX_CLEAN_DEPTH:
        return None
    if isinstance(value, dict):
        return {_clean(k, depth + 1): _clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v, depth + 1) for v in value]
    return value


def _identity(st: os.stat_result) -> FileIdentity:
    return FileIdentity(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def index_step(
    writer: IndexWriter, known: Transcript | None, source: Source, budget: int
) -> StepResult:
    """Bring ``source`` at most ``budget`` bytes closer to its end (module docstring)."""
    try:
        st = os.stat(source.path)
    except FileNotFoundError:
        if known is not None:
            writer.forget(known)
            return StepResult("forgotten")
        return StepResult("absent")
    except OSError as exc:
        return _failed(writer, known, source, f"stat: {exc.strerror or exc}")
    now = _identity(st)
    if known is not None and plan_step(now, known.mark, whole=source.whole) == "skip":
        return StepResult("unchanged", transcript=known)
    try:
        fd = os.open(source.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return StepResult("absent") if known is None else _forgotten(writer, known)
    except OSError as exc:
        return _failed(writer, known, source, f"open: {exc.strerror or exc}")
    try:
        return _step_open(writer, known, source, fd, budget)
    except OSError as exc:
        return _failed(writer, known, source, f"read: {exc.strerror or exc}")
    finally:
        os.close(fd)


def _forgotten(writer: IndexWriter, known: Transcript) -> StepResult:
    writer.forget(known)
    return StepResult("forgotten")


def _failed(
    writer: IndexWriter, known: Transcript | None, source: Source, error: str
) -> StepResult:
    writer.record_error(known, source.path, source.agent, error)
    return StepResult("error", error=error, transcript=known)


def _step_open(
    writer: IndexWriter, known: Transcript | None, source: Source, fd: int, budget: int
) -> StepResult:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return _failed(writer, known, source, "not a regular file")
    if source.owned_only and st.st_uid != os.geteuid():
        return _failed(writer, known, source, "not owned by this user")
    now = _identity(st)
    mark = known.mark if known is not None and known.mark.identity.ino else None
    step = plan_step(now, mark, whole=source.whole)
    if (
        step == "read"
        and mark is not None
        and not head_still_same(mark, os.pread(fd, mark.head_len, 0))
    ):
        step = "restart"
    if step == "skip":
        if known is not None and known.error:
            writer.record_error(known, source.path, source.agent, "")
        return StepResult("unchanged", transcript=known)
    restart = step == "restart"
    if source.whole:
        return _whole(writer, known, source, fd, now)
    start = 0 if restart or known is None else known.mark.offset
    mid_line = False if restart or known is None else known.mid_line
    facts = SessionFacts() if restart or known is None else replace(known.facts)
    batch = read_lines(fd, start, now.size, budget, mid_line=mid_line)
    parsed = Parsed()
    parse = PARSERS[source.agent]
    for line in batch.lines:
        try:
            doc = decode_line(line)
        except ValueError:
            parsed.bad += 1
            continue
        if isinstance(doc, dict):
            parse(doc, facts, parsed)
        else:
            parsed.bad += 1
    head = os.pread(fd, min(HEAD_BYTES, batch.end), 0)
    # The size this step saw (less than the file's when it stopped at its budget): the
    # next step must not take the file for unchanged just because it is.
    seen = FileIdentity(now.dev, now.ino, batch.examined, now.mtime_ns)
    transcript = writer.apply(
        known,
        path=source.path,
        agent=source.agent,
        identity=seen,
        offset=batch.end,
        mid_line=batch.mid_line,
        head=head,
        facts=facts,
        parsed=parsed,
        restart=restart,
    )
    writer.note_skipped_lines(transcript.id, batch.skipped)
    return StepResult("indexed", batch.more, batch.end - start, transcript)


def _whole(
    writer: IndexWriter, known: Transcript | None, source: Source, fd: int, now: FileIdentity
) -> StepResult:
    if now.size > MAX_WHOLE_BYTES:
        return _failed(writer, known, source, f"larger than {MAX_WHOLE_BYTES} bytes")
    chunks: list[bytes] = []
    pos = 0
    while pos < now.size:
        chunk = os.pread(fd, now.size - pos, pos)
        if not chunk:
            break
        chunks.append(chunk)
        pos += len(chunk)
    data = b"".join(chunks)
    parsed = Parsed()
    facts = SessionFacts()
    try:
        doc = decode_line(data)
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        # Being rewritten, or damaged: the rows read before stay; read again when the
        # file changes (its identity is recorded, so an unchanged file is not re-read).
        transcript = writer.apply(
            known,
            path=source.path,
            agent=source.agent,
            identity=now,
            offset=known.mark.offset if known is not None else 0,
            mid_line=False,
            head=data[:HEAD_BYTES],
            facts=known.facts if known is not None else facts,
            parsed=Parsed(bad=1),
            restart=False,
        )
        error = "not a whole JSON document (being written, or damaged)"
        writer.record_error(transcript, source.path, source.agent, error)
        return StepResult("error", error=error, transcript=replace(transcript, error=error))
    parse_gemini_document(doc, facts, parsed)
    transcript = writer.apply(
        known,
        path=source.path,
        agent=source.agent,
        identity=now,
        offset=len(data),
        mid_line=False,
        head=data[:HEAD_BYTES],
        facts=facts,
        parsed=parsed,
        restart=known is not None,
    )
    return StepResult("indexed", False, len(data), transcript)
