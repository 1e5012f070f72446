"""Session GC decisions (ARCHITECTURE §3.1, seed 01 §4.3: reap only on store's word)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from actors.ptyd.gc import Reap, Rekey, Resolution, SessionGc, Suspect
from orca.contracts import store

WT = "repo::/w/a"
NEW = "repo::/w/b"


def unknown(wt: str = WT) -> Resolution:
    return Resolution(wt, known=False)


def test_first_unknown_only_starts_the_grace() -> None:
    """One "unknown" answer never reaps; it starts the grace period."""
    gc = SessionGc(grace_s=10)
    assert gc.on_resolution(unknown(), now=0) == Suspect(WT, 0)
    assert gc.on_resolution(unknown(), now=9.9) is None


def test_unknown_recheck_after_grace_reaps() -> None:
    """A second "unknown" after the grace has elapsed reaps."""
    gc = SessionGc(grace_s=10)
    gc.on_resolution(unknown(), now=0)
    assert gc.on_resolution(unknown(), now=10) == Reap(WT)
    assert gc.suspects == {}


def test_known_answer_in_between_restarts_the_grace() -> None:
    """A "known" answer clears suspicion; a later unknown starts over."""
    gc = SessionGc(grace_s=10)
    gc.on_resolution(unknown(), now=0)
    assert gc.on_resolution(Resolution(WT, known=True, current_id=WT), now=5) is None
    assert gc.on_resolution(unknown(), now=20) == Suspect(WT, 20)


def test_store_down_is_not_evidence() -> None:
    """No answer (store unavailable) makes no progress towards a reap."""
    gc = SessionGc(grace_s=10)
    gc.on_store_unavailable(WT)
    gc.on_store_unavailable(WT)
    assert gc.suspects == {}
    assert gc.on_resolution(unknown(), now=100) == Suspect(WT, 100)


def test_alias_answer_rekeys_instead_of_reaping() -> None:
    """An id the store knows as a prior id of another worktree is re-keyed, never reaped."""
    gc = SessionGc(grace_s=10)
    gc.on_resolution(unknown(), now=0)
    assert gc.on_resolution(Resolution(WT, known=True, current_id=NEW), now=1) == Rekey(WT, NEW)
    assert gc.on_resolution(unknown(), now=50) is None


def test_rename_event_rekeys_and_ignores_late_unknown() -> None:
    """worktree.renamed re-keys; an "unknown" for the old id asked before it is ignored."""
    gc = SessionGc(grace_s=10)
    gc.on_resolution(unknown(), now=0)
    assert gc.on_renamed(WT, NEW) == Rekey(WT, NEW)
    assert gc.on_resolution(unknown(), now=30) is None
    assert gc.on_resolution(unknown(), now=60) is None


def test_renamed_id_reused_by_new_session_is_checked_again() -> None:
    """If a session is spawned again under an id renamed away, GC considers it again."""
    gc = SessionGc(grace_s=10)
    gc.on_renamed(WT, NEW)
    gc.on_sessions_spawned(WT)
    assert gc.on_resolution(unknown(), now=0) == Suspect(WT, 0)


_events = st.lists(
    st.tuples(
        st.sampled_from(["unknown", "known", "alias", "renamed", "down"]),
        st.floats(min_value=0, max_value=20, allow_nan=False),
    ),
    max_size=30,
)


@given(_events)
def test_reap_requires_two_unknowns_a_grace_apart_and_no_rename(
    events: list[tuple[str, float]],
) -> None:
    """Hypothesis: Reap only after unknown answers >= grace apart with no known/rename between."""
    gc = SessionGc(grace_s=10)
    now = 0.0
    first_unknown: float | None = None
    renamed = False
    for kind, step in events:
        now += step
        if kind == "renamed":
            decision: object = gc.on_renamed(WT, NEW)
            renamed = True
            first_unknown = None
            continue
        if kind == "down":
            gc.on_store_unavailable(WT)
            continue
        if kind == "known":
            decision = gc.on_resolution(Resolution(WT, True, WT), now)
        elif kind == "alias":
            decision = gc.on_resolution(Resolution(WT, True, NEW), now)
        else:
            decision = gc.on_resolution(unknown(), now)
        if isinstance(decision, Reap):
            assert not renamed
            assert first_unknown is not None and now - first_unknown >= 10
            first_unknown = None
            continue
        assert not (
            kind == "unknown"
            and not renamed
            and first_unknown is not None
            and now - first_unknown >= 10
        ), "a due reap was not decided"
        if kind == "alias" and not renamed:
            assert decision == Rekey(WT, NEW)
            renamed = True
        if kind in ("known", "alias"):
            first_unknown = None
        elif kind == "unknown" and not renamed and first_unknown is None:
            first_unknown = now


def test_the_store_answer_becomes_a_resolution() -> None:
    """identity.resolve's typed answer: unknown is unknown; current/alias name the id."""
    unknown_answer = store.IdentityResolved(status="unknown", worktree_id=None)
    assert Resolution.of(WT, unknown_answer) == unknown()
    alias = store.IdentityResolved(status="alias", worktree_id=NEW)
    assert Resolution.of(WT, alias) == Resolution(WT, known=True, current_id=NEW)
    current = store.IdentityResolved(status="current", worktree_id=WT)
    assert SessionGc().on_resolution(Resolution.of(WT, current), now=0) is None
