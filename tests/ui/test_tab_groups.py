"""Several tab groups per worktree in ``orca ui`` (issue 17, seed 01 §6.2), headless.

The strip is split into a second group (a shell in each), a tab is moved between the
groups, a tab is clicked, the focus goes to the next group; a new ``orca ui`` shows the
same groups, tabs and focus from the store's session, and closing a group's last tab
closes the group (its neighbour takes its place).
"""

from __future__ import annotations

from typing import Any

from actors.ui.app import OrcaApp
from orca.client.sync import invoke
from orca.contracts import store
from orca.model import tab_groups as layout
from orca.model.tabs import TabGroupLeaf, TabGroupSplit
from orca.paths import resolve_paths
from orca.wire.errors import Unavailable


async def ready(app: OrcaApp) -> None:
    await app.wait_for(lambda: all(app.backend.alive.values()))
    await app.wait_for(lambda: {w.name for w in app.items()} >= {"alpha", "beta"})


def stored_session() -> Any:
    return invoke(store.SESSION_GET, store.SessionGetArgs())


def groups_shape(session: Any, worktree_id: str) -> list[tuple[str, list[str], str | None]]:
    """(group id, tab ids in strip order, active tab) per group, in tree order."""
    return [
        (g.id, [t.id for t in layout.terminal_tabs(session, worktree_id, g.id)], g.active_tab_id)
        for g in layout.groups_of(session, worktree_id)
    ]


def test_tab_groups_are_split_saved_restored_and_closed(tree: Any, drive: Any) -> None:
    alpha = tree.worktrees["alpha"]
    seen: dict[str, Any] = {}

    def live(app: OrcaApp, count: int) -> bool:
        views = app.pane_views()
        return len(views) == count and all(v.session_id for v in views)

    async def build(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=True)
        await pilot.press("ctrl+g", "t")
        await app.wait_for(lambda: live(app, 1))
        (t1,) = [t.id for t in layout.all_terminal_tabs(app.backend.session(), alpha)]
        app.pane_views()[0].focus()
        await pilot.press("ctrl+g", "s")  # a second group on the right, a shell in it
        await app.wait_for(lambda: live(app, 2) and len(app.group_views) == 2)
        g1, g2 = layout.group_ids(app.backend.session(), alpha)
        assert list(app.group_views) == [g1, g2]
        tree_now = app.backend.session().tab_group_layouts[alpha]
        assert isinstance(tree_now, TabGroupSplit) and tree_now.direction == "vertical"
        (t2,) = layout.group_of(app.backend.session(), alpha, g2).tab_order  # type: ignore[union-attr]
        await app.wait_for(lambda: app.focused_pane in layout.pane_keys(app.backend.session(), t2))
        await pilot.press("ctrl+g", "t")  # a tab in the active (second) group
        try:  # a terminal spawned under the suite's load: 10 s was short once in CI
            await app.wait_for(
                lambda: len(groups_shape(app.backend.session(), alpha)[1][1]) == 2
                and live(app, 2),
                30,
            )
        except TimeoutError:
            views = [(v.pane_key, v.session_id) for v in app.pane_views()]
            shape = groups_shape(app.backend.session(), alpha)
            raise AssertionError(f"no second tab live in group 2: {shape}, views {views}") from None
        t3 = groups_shape(app.backend.session(), alpha)[1][1][1]
        await app.wait_for(lambda: app.focused_pane in layout.pane_keys(app.backend.session(), t3))
        await pilot.press("ctrl+g", "m")  # t3 to the next group (cycling: the first)
        await app.wait_for(
            lambda: (
                groups_shape(app.backend.session(), alpha) == [(g1, [t1, t3], t3), (g2, [t2], t2)]
            )
        )
        await app.wait_for(lambda: app.focused_pane in layout.pane_keys(app.backend.session(), t3))
        strip = app.group_views[g1].strip
        x = strip.spans[0][0] + 2  # inside " 1:… " (plus the strip's padding)
        assert await pilot.click(strip, offset=(x, 0))
        await app.wait_for(
            lambda: groups_shape(app.backend.session(), alpha)[0] == (g1, [t1, t3], t1)
        )
        await app.wait_for(lambda: app.focused_pane in layout.pane_keys(app.backend.session(), t1))
        await pilot.press("ctrl+g", "g")  # the next group: the second
        await app.wait_for(lambda: app.backend.session().active_group_id_by_worktree[alpha] == g2)
        (p2,) = layout.pane_keys(app.backend.session(), t2)
        await app.wait_for(lambda: app.focused_pane == p2)
        view = app.pane_view(p2)
        assert view is not None
        await pilot.press(*"echo grp-$((6*7))", "enter")
        await app.wait_for(lambda: "grp-42" in view.screen_text())
        session = app.backend.session()
        seen["shape"] = groups_shape(session, alpha)
        seen["tree"] = session.tab_group_layouts[alpha]
        seen["p2"] = p2
        seen["bound"] = {
            key: app.backend.session_for_pane(key).session_id  # type: ignore[union-attr]
            for tab in (t1, t2, t3)
            for key in layout.pane_keys(session, tab)
        }
        seen["g1"], seen["g2"] = g1, g2

    drive(OrcaApp(resolve_paths(), bell=False), build)
    g1, g2, p2 = seen["g1"], seen["g2"], seen["p2"]
    saved = stored_session().session
    assert groups_shape(saved, alpha) == seen["shape"], "the groups are the store's"
    assert saved.active_group_id_by_worktree[alpha] == g2
    mru = layout.group_of(saved, alpha, g1).recent_tab_ids  # type: ignore[union-attr]
    assert mru is not None and mru[-2:] == (seen["shape"][0][1][1], seen["shape"][0][1][0])

    async def restored(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        await app.wait_for(lambda: app.selected_worktree == alpha)
        await app.wait_for(lambda: list(app.group_views) == [g1, g2])
        t1 = seen["shape"][0][2]
        shown = {*layout.pane_keys(app.backend.session(), t1), p2}
        await app.wait_for(lambda: {v.pane_key for v in app.pane_views()} == shown)
        for view in app.pane_views():
            assert view.session_id == seen["bound"][view.pane_key], "the same live terminal"
        assert app.group_views[g2].strip.has_class("active")
        assert not app.group_views[g1].strip.has_class("active")
        assert app.active_pane() == p2, "the focus is where it was"
        view = app.pane_view(p2)
        assert view is not None
        await app.wait_for(lambda: "grp-42" in view.screen_text())
        # closing the second group's only tab closes the group: the first takes its place
        view.focus()
        await pilot.press("ctrl+g", "x")
        await pilot.press("y")
        await app.wait_for(
            lambda: (
                stored_session().session.tab_group_layouts.get(alpha) == TabGroupLeaf(group_id=g1)
            ),
            20,
        )
        await app.wait_for(lambda: list(app.group_views) == [g1])
        assert app.backend.session().active_group_id_by_worktree[alpha] == g1

    drive(OrcaApp(resolve_paths(), bell=False), restored)
    saved = stored_session().session
    assert [g.id for g in saved.tab_groups[alpha]] == [g1]  # type: ignore[index]
    assert groups_shape(saved, alpha) == [seen["shape"][0]]


def test_a_refused_layout_repair_is_not_retried_on_every_render(tree: Any, drive: Any) -> None:
    """A stored session with an empty tab group is repaired by the UI (normalize_groups);
    when the store refuses the write (read-only: a newer Orca's data file), the UI says
    so once and does not ask again on every render until the session changes."""
    alpha = tree.worktrees["alpha"]
    attempts: list[str] = []

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await ready(app)
        app.select_worktree(alpha, focus_terminal=False)

        async def refused(edit: Any) -> Any:
            attempts.append("edit")
            raise Unavailable("orca-data.json is from a newer Orca: read-only here")

        app.backend_edit = refused  # type: ignore[method-assign]
        empty = {"id": "g-empty", "worktreeId": alpha}
        patch = {
            "tabGroups": {alpha: [empty]},
            "tabGroupLayouts": {alpha: {"type": "leaf", "groupId": "g-empty"}},
        }
        invoke(store.SESSION_PATCH, store.SessionPatchArgs(patch=patch))
        await app.wait_for(lambda: bool(attempts), 20)
        renders = app.renders
        for _ in range(5):  # renders that each see the same unrepaired session
            app.poke(view=True)
            # the render, and any repair it started, done
            await app.wait_for(lambda r=app.renders: app.renders > r and not app._repairing, 10)
        assert app.renders >= renders + 5
        assert attempts == ["edit"], attempts
        assert "could not be saved" in (app.last_error or "")

    drive(OrcaApp(resolve_paths(), bell=False), scenario)
