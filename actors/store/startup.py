"""Start-up of the store's files: load the primary (or a backup) with the journal applied,
then compact once before serving.

Load order (issue 16 #9: recovery never settles for less than the newest good copy):

1. The journal is read first (whole frames only; a torn tail is cut off).
2. ``DurableFile.load`` parses the primary; if it is damaged it is kept aside and the
   backups are tried newest first. Each candidate is parsed *with the journal applied*
   (``journal_parser``): on the primary the journal's base names, exactly the puts after
   the base; on any other file every put, overlaid. The file must decode on its own
   first (the journal never makes a damaged file look good), and an overlay that does
   not decode is dropped (the file alone is loaded, and that is reported): the journal
   never makes a good file unusable either.
3. No primary at all: the journal is applied to a fresh state when its base says it was
   written for none (a first start killed before its first save); otherwise it belongs
   to a file that was deleted (a reset by hand) and is ignored, with a report.
4. ``compact_at_start`` (skipped for a file of a newer schemaVersion, which is served
   read-only and never written, nor is its journal: ``load.LoadedState.newer_schema``): the loaded state is written as the primary (nothing is written
   when the bytes are already canonical) and the journal is rewritten as a bare base
   naming it. If the primary cannot be written (disk full), the journal instead gets a
   base naming no file plus one put holding the whole state, so it stands on its own.

The revision counter continues from the journal's highest seq, so puts of this process
always sort after those of the last one.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actors.store import journal_format as jf
from actors.store.bounded_json import decode_bounded
from actors.store.core import StoreCore
from actors.store.durable_file import DurableFile, SaveFailed
from actors.store.durable_load import LoadReport
from actors.store.journal import Journal, journal_path, read_journal_file
from actors.store.load import LoadedState, decode_state_data, fresh_state
from actors.store.session_normalize import Mint
from orca.model.codec import encode_json, to_builtins

log = logging.getLogger(__name__)


def sha_hex(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


@dataclass
class ReplayReport:
    """What the journal did at load (``sys.stats`` → store.load.journal)."""

    applied: int = 0  # puts applied to the loaded file
    matched: bool = True  # the journal was written for the file it was applied to
    torn_tail: bool = False  # a partial last frame (a kill mid-append) was cut off
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "applied": self.applied,
            "matched": self.matched,
            "tornTail": self.torn_tail,
            "problems": list(self.problems),
        }


def journal_parser(
    home_dir: str, mint: Mint, contents: jf.JournalContents, report: ReplayReport
) -> Any:
    """The ``parse`` for ``DurableFile.load``: file bytes + the journal → LoadedState."""

    def parse(raw: bytes) -> LoadedState:
        # The file must stand on its own first: the journal's ops could otherwise paper
        # over a damaged file ("[]" plus a put of the repos would look like a state).
        alone = decode_state_data(
            decode_bounded(raw, what="state file"), home_dir=home_dir, mint=mint
        )
        replay = jf.plan_replay(contents, sha_hex(raw))
        report.applied, report.matched = 0, True
        if not replay.ops:
            return alone
        data = jf.apply_ops(decode_bounded(raw), replay.ops)
        try:
            loaded = decode_state_data(data, home_dir=home_dir, mint=mint)
        except ValueError as exc:
            report.problems.append(f"journal: {replay.applied} changes not applicable ({exc})")
            return alone
        report.applied, report.matched = replay.applied, replay.matched
        return loaded

    return parse


@dataclass
class StartupLoad:
    durable: DurableFile
    journal: Journal
    core: StoreCore
    report: LoadReport
    replay: ReplayReport
    problems: tuple[str, ...]
    # Set when a newer Orca wrote the file: the store refuses every change (read-only).
    newer_schema: int | None = None


def load_store(state_file: Path, home_dir: str, mint: Mint) -> StartupLoad:
    """Steps 1-3 of the module docstring (blocking: run it in a thread)."""
    journal = Journal(journal_path(state_file))
    contents = read_journal_file(journal.path)
    replay = ReplayReport(torn_tail=contents.torn)
    durable = DurableFile(state_file)
    core = StoreCore(fresh_state(home_dir=home_dir), mint=mint)
    loaded, report = durable.load(journal_parser(home_dir, core.mint, contents, replay))
    if loaded is None:
        loaded = _fresh_with_journal(home_dir, core.mint, contents, replay, report)
    if loaded is not None:
        core.state = loaded.state
    core.revision = max(r.seq for r in contents.records) if contents.records else 0
    problems = () if loaded is None else loaded.problems
    newer = None if loaded is None else loaded.newer_schema
    return StartupLoad(durable, journal, core, report, replay, problems, newer)


def _fresh_with_journal(
    home_dir: str,
    mint: Mint,
    contents: jf.JournalContents,
    replay_report: ReplayReport,
    report: LoadReport,
) -> LoadedState | None:
    replay = jf.plan_replay(contents, None)
    if not replay.ops:
        return None
    if not replay.matched and report.source == "missing":
        replay_report.problems.append(
            f"journal: {replay.applied} changes for a state file that no longer exists, ignored"
        )
        return None
    data = to_builtins(fresh_state(home_dir=home_dir))
    try:
        loaded = decode_state_data(jf.apply_ops(data, replay.ops), home_dir=home_dir, mint=mint)
    except ValueError as exc:
        replay_report.problems.append(f"journal: {replay.applied} changes not applicable ({exc})")
        return None
    replay_report.applied, replay_report.matched = replay.applied, replay.matched
    return loaded


def compact_at_start(loaded: StartupLoad) -> None:
    """Step 4 (blocking). Never raises for a disk error: a broken journal is reported."""
    core, durable, journal = loaded.core, loaded.durable, loaded.journal
    if loaded.newer_schema is not None:
        log.warning("state file of a newer schemaVersion: not compacted, served read-only")
        return
    data = encode_json(core.state)
    fresh = loaded.report.source == "missing" and loaded.replay.applied == 0
    outcome = durable.save(data, core.revision, backup="never" if fresh else "due")
    try:
        if isinstance(outcome, SaveFailed):
            log.error(
                "start-up save failed (%s); the journal keeps the state", outcome.error.message
            )
            journal.rewrite_sync(core.revision, None, [], root=to_builtins(core.state))
        else:
            journal.rewrite_sync(core.revision, sha_hex(data), [])
    except OSError as exc:
        log.error("journal %s cannot be written (%s): changes will be refused", journal.path, exc)
