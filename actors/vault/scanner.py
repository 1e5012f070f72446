"""The scan: every transcript, stepped in turn until each is read to its end.

A pass lists the files (``discovery``, plus the transcripts hooks bound that live
elsewhere, plus every file indexed before, so a vanished one is forgotten), then steps
them round-robin: a file with more to read than one step's budget goes to the back of
the queue, so a 200 MB transcript being written while we read it is read a few MB at a
time between everyone else's new lines, and a pass ends when every file has been read
to the end it had when its step began.

Steps run in the worker thread in groups (:data:`GROUP_S` of work per hop, so an
unchanged tree of thousands of files costs one hop, not thousands). The writer
connection is used by this module only, always under the actor's write lock.
"""

from __future__ import annotations

import sqlite3
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from actors.vault.discovery import discover
from actors.vault.indexdb import IndexWriter, Transcript
from actors.vault.step import Source, StepResult, index_step

# Worker-thread time per hop: short enough that the write lock (and so a rebuild or a
# binding write) never waits long, long enough to amortize the hop.
GROUP_S = 0.1
# Rows given to the full-text table per commit (a few ms of tokenizing each).
TEXT_ROWS_PER_COMMIT = 200


@dataclass
class PassReport:
    steps: int = 0
    indexed: int = 0
    consumed: int = 0
    errors: int = 0
    forgotten: int = 0


class Scanner:
    def __init__(
        self, conn: sqlite3.Connection, roots: dict[str, list[str]], step_bytes: int
    ) -> None:
        self.writer = IndexWriter(conn)
        self.roots = roots
        self.step_bytes = step_bytes
        self.known: dict[str, Transcript] = self.writer.transcripts()

    def sources(self, bound: Iterable[Source]) -> deque[Source]:
        """Worker thread: what this pass steps (module docstring)."""
        found = discover(self.roots, bound)
        seen = {s.path for s in found}
        for path, t in self.known.items():
            if path not in seen:
                whole = t.agent == "gemini" and path.endswith(".json")
                found.append(Source(t.agent, path, whole=whole, owned_only=True))  # type: ignore[arg-type]
        return deque(found)

    def step_group(self, queue: deque[Source], report: PassReport) -> None:
        """Worker thread: step sources off ``queue`` for about GROUP_S; a source with
        more to read goes back to the end of the queue."""
        deadline = time.monotonic() + GROUP_S
        while queue and time.monotonic() < deadline:
            source = queue.popleft()
            result = self.step(source)
            report.steps += 1
            report.consumed += result.consumed
            if result.outcome == "indexed":
                report.indexed += 1
            elif result.outcome == "error":
                report.errors += 1
            elif result.outcome == "forgotten":
                report.forgotten += 1
            if result.more:
                queue.append(source)

    def step(self, source: Source) -> StepResult:
        known = self.known.get(source.path)
        result = index_step(self.writer, known, source, self.step_bytes)
        if result.outcome == "forgotten":
            self.known.pop(source.path, None)
        elif result.transcript is not None:
            self.known[source.path] = result.transcript
        elif result.outcome == "error" and known is None:
            self.known.update(self.writer.transcripts(source.path))  # the row record_error made
        return result

    def index_text_group(self) -> int:
        """Worker thread: give the full-text table the rows it lacks for about GROUP_S;
        how many it got (0 once it holds them all)."""
        deadline = time.monotonic() + GROUP_S
        total = 0
        while time.monotonic() < deadline:
            got = self.writer.index_text(TEXT_ROWS_PER_COMMIT)
            total += got
            if got < TEXT_ROWS_PER_COMMIT:
                break
        return total

    def enforce_budget(self, max_entries: int, max_text_bytes: int) -> int:
        evicted = self.writer.enforce_budget(max_entries, max_text_bytes)
        if evicted:
            self.known = self.writer.transcripts()
        return evicted

    def counters(self) -> tuple[int, int]:
        return self.writer.counter("generation"), self.writer.counter("revision")
