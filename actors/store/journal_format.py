"""The journal's bytes and meaning, with no I/O: records, state diffs, replay.

File ``orca-data.json.journal`` is a sequence of frames, each
``<u32 length><u32 crc32 of payload><payload>`` (big-endian), payload = one JSON object:

- ``{"k": "base", "seq": s, "sha": hex|null}`` first frame: the records that follow
  apply to the primary whose SHA-256 is ``sha`` (null: no primary, a first start), which
  holds every change up to revision ``s``;
- ``{"k": "put", "seq": n, "ops": [op...]}`` the change that made revision ``n``.

An op is ``[path, value]`` (set) or ``[path]`` (delete); ``path`` is a list of wire keys
from the top of the file (``["worktreeMeta", "<id>"]``, ``["workspaceSession",
"activeTabId"]``); ``[[], value]`` replaces the whole state. Values are absolute, so a
record means the same thing whatever ran before it.

Replay (``plan_replay``): on the primary the base names, the puts after the base's
``seq``; on any other file (a compaction that landed before the journal was rotated, a
backup loaded in place of a damaged primary) every put is overlaid in order, and the
replay says it did not match. Overlaying is safe on any file at least as new as the
base because ops are absolute and each location of the state always gets a path of the
same shape: replaying a put the file already holds rewrites the value it already has.
A torn tail (a kill in the middle of an append) ends the journal at the last whole
frame; nothing after a bad frame is trusted.

The diff (``diff_state``) compares two immutable states by identity first, then by
equality, descending ``DIFF_DEPTH`` levels into records (state -> session -> field) and
one level into maps (one op per changed key; a map's values are replaced whole): a
session patch or a meta change becomes a few small ops, never the whole state.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from actors.store.bounded_json import decode_bounded
from orca.model.codec import EXTRA_WIRE_KEY, Record, to_builtins

Path = list[str]
JournalOp = list[Any]  # [path, value] | [path]

FRAME_HEADER: Final = struct.Struct(">II")
MAX_RECORD_BYTES: Final = 64 * 1024 * 1024  # one record is a change, at most a whole state
DIFF_DEPTH: Final = 2  # state -> session -> field: deep enough that a patch stays small


@dataclass(frozen=True)
class JournalRecord:
    kind: str  # "base" | "put"
    seq: int
    sha: str | None = None
    ops: tuple[JournalOp, ...] = ()


@dataclass(frozen=True)
class JournalContents:
    records: tuple[JournalRecord, ...]
    valid_bytes: int  # offset just after the last whole frame
    torn: bool  # bytes after valid_bytes were ignored


@dataclass(frozen=True)
class Replay:
    ops: tuple[JournalOp, ...]  # in order
    applied: int  # put records applied
    last_seq: int  # highest seq the journal knows (0 when empty)
    matched: bool  # the base named the loaded file (else every put was overlaid)


# -- framing ------------------------------------------------------------------------
def frame(payload: dict[str, Any]) -> bytes:
    body = msgspec.json.encode(payload)
    return FRAME_HEADER.pack(len(body), zlib.crc32(body)) + body


def base_frame(seq: int, sha: str | None) -> bytes:
    return frame({"k": "base", "seq": seq, "sha": sha})


def put_frame(seq: int, ops: list[JournalOp]) -> bytes:
    return frame({"k": "put", "seq": seq, "ops": ops})


def _record(payload: Any) -> JournalRecord | None:
    if not isinstance(payload, dict):
        return None
    kind, seq, sha = payload.get("k"), payload.get("seq"), payload.get("sha")
    ops = payload.get("ops", [])
    if kind not in ("base", "put") or type(seq) is not int or seq < 0:
        return None
    if sha is not None and not isinstance(sha, str):
        return None
    if not isinstance(ops, list) or not all(_valid_op(op) for op in ops):
        return None
    return JournalRecord(kind, seq, sha, tuple(ops))


def _valid_op(op: Any) -> bool:
    return (
        isinstance(op, list)
        and len(op) in (1, 2)
        and isinstance(op[0], list)
        and all(isinstance(key, str) for key in op[0])
        and (len(op) == 2 or len(op[0]) > 0)
    )


def read_journal(raw: bytes) -> JournalContents:
    """Every whole, checksummed, well-formed frame from the start; stops at the first bad one."""
    records: list[JournalRecord] = []
    offset = 0
    while offset + FRAME_HEADER.size <= len(raw):
        length, crc = FRAME_HEADER.unpack_from(raw, offset)
        start = offset + FRAME_HEADER.size
        body = raw[start : start + length]
        if length > MAX_RECORD_BYTES or len(body) < length or zlib.crc32(body) != crc:
            break
        try:
            record = _record(decode_bounded(body, what="journal record"))
        except ValueError:
            record = None
        if record is None:
            break
        records.append(record)
        offset = start + length
    return JournalContents(tuple(records), offset, offset != len(raw))


def plan_replay(contents: JournalContents, file_sha: str | None) -> Replay:
    """What to apply to a loaded file with hash ``file_sha`` (None: no file at all)."""
    records = contents.records
    last_seq = max((r.seq for r in records), default=0)
    base = records[0] if records and records[0].kind == "base" else None
    matched = base is not None and base.sha == file_sha
    start = base.seq if matched and base is not None else -1
    puts = [r for r in records if r.kind == "put" and r.seq > start]
    ops = tuple(op for r in puts for op in r.ops)
    return Replay(ops, len(puts), last_seq, matched)


# -- applying ------------------------------------------------------------------------
def apply_ops(data: Any, ops: tuple[JournalOp, ...] | list[JournalOp]) -> Any:
    """Apply ``ops`` to builtins ``data`` (mutated where it is a dict); returns the root."""
    for op in ops:
        path = op[0]
        if not path:
            data = op[1] if len(op) == 2 else {}
            continue
        if not isinstance(data, dict):
            data = {}
        node = data
        for key in path[:-1]:
            child = node.get(key)
            if not isinstance(child, dict):
                child = {}
                node[key] = child
            node = child
        if len(op) == 2:
            node[path[-1]] = op[1]
        else:
            node.pop(path[-1], None)
    return data


# -- diffing -------------------------------------------------------------------------
def wire_value(value: Any) -> Any:
    """A model value as the builtins the file holds (records with their unknown fields)."""
    if isinstance(value, Record):
        return to_builtins(value)
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    if isinstance(value, Mapping):
        return {k: wire_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [wire_value(v) for v in value]
    return msgspec.to_builtins(value)


def diff_state(old: Record, new: Record) -> list[JournalOp]:
    """Ops that turn the file of ``old`` into the file of ``new`` (absolute values)."""
    if type(old) is not type(new):
        return [[[], to_builtins(new)]]
    ops: list[JournalOp] = []
    _diff_record(old, new, [], ops, 0)
    return ops


def _diff_record(old: Record, new: Record, path: Path, ops: list[JournalOp], depth: int) -> None:
    for field in msgspec.structs.fields(type(new)):
        a = getattr(old, field.name)
        b = getattr(new, field.name)
        if a is b:
            continue
        if field.encode_name == EXTRA_WIRE_KEY:
            _diff_map(a, b, path, ops)  # unknown keys sit at this level
            continue
        here = [*path, field.encode_name]
        if depth < DIFF_DEPTH and isinstance(a, Record) and type(a) is type(b):
            _diff_record(a, b, here, ops, depth + 1)
        elif depth < DIFF_DEPTH and isinstance(a, Mapping) and isinstance(b, Mapping):
            _diff_map(a, b, here, ops)
        elif a != b:
            ops.append([here, wire_value(b)])


def _diff_map(a: Mapping[str, Any], b: Mapping[str, Any], path: Path, ops: list[JournalOp]) -> None:
    for key, value in b.items():
        before = a.get(key, _MISSING)
        # Map values are replaced whole: a partial record could not stand on its own
        # if the journal is ever overlaid on an older backup that lacks the entry.
        if before is value:
            continue
        if before is _MISSING or before != value:
            ops.append([[*path, key], wire_value(value)])
    for key in a:
        if key not in b:
            ops.append([[*path, key]])


_MISSING: Final = object()
