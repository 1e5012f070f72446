"""The journal: state diffs replay to the same file, torn tails, group commit, rotation."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.store import entities, sessions, worktrees
from actors.store import journal_format as jf
from actors.store.journal import Journal
from actors.store.load import decode_state_data, fresh_state
from orca.model.codec import to_builtins
from orca.model.state import PersistedState

HOME = "/h"


def mint() -> str:
    mint.n += 1  # type: ignore[attr-defined]
    return f"00000000-0000-4000-8000-{mint.n:012d}"  # type: ignore[attr-defined]


mint.n = 0  # type: ignore[attr-defined]


def replayed(base: PersistedState, ops: list[jf.JournalOp]) -> PersistedState:
    return decode_state_data(jf.apply_ops(to_builtins(base), ops), home_dir=HOME, mint=mint).state


def changes(state: PersistedState) -> list[PersistedState]:
    """A run of real store changes, each state derived from the previous one."""
    out = [state]

    def step(change_state: PersistedState) -> None:
        out.append(change_state)

    step(entities.add_repo(out[-1], "/src/a", new_id="r1", now_ms=1).state)
    step(entities.patch_settings(out[-1], {"theme": "dark", "nestWorkspaces": False}).state)
    step(worktrees.patch_meta(out[-1], "r1::/w/one", {"displayName": "One", "x": [1]}).state)
    step(worktrees.patch_meta(out[-1], "r1::/w/two", {"comment": "c"}).state)
    step(worktrees.remove_meta(out[-1], "r1::/w/one").state)
    step(
        sessions.patch_session(out[-1], None, {"activeWorktreeId": "r1::/w/two"}, None, mint).state
    )
    step(entities.remove_repo(out[-1], "r1").state)
    return out


def test_each_change_replays_to_exactly_the_new_state() -> None:
    """apply(file of old, diff(old, new)) decodes to new, for every real change."""
    states = changes(fresh_state(home_dir=HOME))
    for old, new in itertools.pairwise(states):
        ops = jf.diff_state(old, new)
        assert ops, "a change must produce ops"
        assert replayed(old, ops) == new


def test_overlaying_every_put_on_a_newer_file_gives_the_newest_state() -> None:
    """Replaying puts the file already holds is harmless (absolute values)."""
    states = changes(fresh_state(home_dir=HOME))
    all_ops = [op for old, new in itertools.pairwise(states) for op in jf.diff_state(old, new)]
    for middle in states:
        assert replayed(middle, all_ops) == states[-1]


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8), st.integers() | st.text(max_size=5), max_size=6
    ),
    st.dictionaries(
        st.text(min_size=1, max_size=8), st.integers() | st.text(max_size=5), max_size=6
    ),
)
def test_any_settings_change_round_trips(
    before: dict[str, object], after: dict[str, object]
) -> None:
    """Unknown settings added, changed and removed replay exactly."""
    base = fresh_state(home_dir=HOME)
    known = {"workspaceDir", "nestWorkspaces"}
    old = entities.patch_settings(base, {k: v for k, v in before.items() if k not in known}).state
    new_settings = to_builtins(base.settings) | {k: v for k, v in after.items() if k not in known}
    new = entities.patch_settings(base, new_settings).state
    new = PersistedState(**{f: getattr(new, f) for f in new.__struct_fields__})  # fresh object
    assert replayed(old, jf.diff_state(old, new)).settings == new.settings


def test_a_torn_tail_ends_the_journal_at_the_last_whole_frame() -> None:
    """Cut at every byte of the last frame: exactly the frames before it survive."""
    frames = [jf.base_frame(0, None), jf.put_frame(1, [[["a"], 1]]), jf.put_frame(2, [[["b"], 2]])]
    whole = b"".join(frames)
    keep = len(whole) - len(frames[-1])
    for cut in range(keep, len(whole)):
        contents = jf.read_journal(whole[:cut])
        assert [r.seq for r in contents.records] == [0, 1]
        assert contents.valid_bytes == keep and contents.torn is (cut != keep)
    flipped = whole[:-1] + bytes([whole[-1] ^ 1])  # a bad checksum is a torn frame too
    assert [r.seq for r in jf.read_journal(flipped).records] == [0, 1]


def test_replay_on_the_based_file_skips_what_it_holds_and_overlays_on_any_other() -> None:
    """base names sha S at seq 1: on S only puts after 1; on another file all puts."""
    raw = jf.base_frame(1, "S") + jf.put_frame(1, [[["a"], 1]]) + jf.put_frame(2, [[["b"], 2]])
    contents = jf.read_journal(raw)
    on_base = jf.plan_replay(contents, "S")
    assert (on_base.applied, on_base.matched, on_base.ops) == (1, True, ([["b"], 2],))
    other = jf.plan_replay(contents, "OTHER")
    assert (other.applied, other.matched, other.last_seq) == (2, False, 2)


@pytest.mark.parametrize("writers", [1, 25])
async def test_concurrent_appends_share_one_fsync(tmp_path: Path, writers: int) -> None:
    """Appends queued while the writer is busy go out as one batch (group commit)."""
    journal = Journal(tmp_path / "j")
    journal.rewrite_sync(0, None, [])
    published: list[int] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as writer:
            async with trio.open_nursery() as nursery:
                for seq in range(1, writers + 1):
                    nursery.start_soon(
                        journal.append, seq, [[["k"], seq]], lambda s=seq: published.append(s)
                    )
                await trio.testing.wait_all_tasks_blocked()
                await writer.start(journal.run)  # the writer starts with every append queued
            writer.cancel_scope.cancel()
    stats = journal.statistics()
    assert (stats.batches, stats.largest_batch, stats.appended) == (1, writers, writers)
    contents = jf.read_journal((tmp_path / "j").read_bytes())
    on_disk = [r.seq for r in contents.records]
    assert on_disk[0] == 0 and sorted(on_disk[1:]) == list(range(1, writers + 1))
    assert published == on_disk[1:]  # callbacks run in queue order, the file's order
    journal.close()


async def test_rotation_keeps_only_puts_newer_than_the_compacted_primary(tmp_path: Path) -> None:
    """rotate(2, sha): the new file is base(2, sha) + the puts after 2, and appends follow."""
    journal = Journal(tmp_path / "j")
    journal.rewrite_sync(0, None, [])
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(journal.run)
            for seq in (1, 2, 3):
                await journal.append(seq, [[["k"], seq]])
            assert await journal.rotate(2, "S") is None
            await journal.append(4, [[["k"], 4]])
            nursery.cancel_scope.cancel()
    contents = jf.read_journal((tmp_path / "j").read_bytes())
    assert [(r.kind, r.seq, r.sha) for r in contents.records] == [
        ("base", 2, "S"),
        ("put", 3, None),
        ("put", 4, None),
    ]
    assert not contents.torn
    journal.close()
