"""The web dashboard in a real browser (Debian's chromium, selenium; issue 27).

One tree (web on) and one browser session for the module. The agents are the test
stand-ins (``fake_agent.sh``, ``permission_agent.sh``) in real PTYs of ptyd, reporting
through the real hook script; the page is read the way a person reads it (its
elements, the terminal's screen, a screenshot's pixels), and acted on by clicks and
keystrokes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.browser import bright_pixels, chromium, console_errors, wait_for
from support.remote import wait_until
from support.web import FAKE_AGENT, PERMISSION_AGENT, WebTree, stop_tree, web_tree

from orca.client.sync import invoke
from orca.contracts import ptyd

SHOTS = Path(__file__).resolve().parents[2] / ".web-screenshots"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebTree]:
    tree = web_tree(tmp_path_factory.mktemp("web") / "home")
    try:
        yield tree
    finally:
        stop_tree(tree.tree)


@pytest.fixture(scope="module")
def page(site: WebTree) -> Iterator[Any]:
    """One browser, paired once with every scope (as `orca web --open` does)."""
    with chromium() as driver:
        driver.get(site.pair("view", "type", "approve"))
        wait_for(driver, lambda d: d.find_elements("id", "board"), "the board")
        yield driver


def _agent_state(driver: Any, pane_key: str) -> str | None:
    rows = driver.find_elements("css selector", f'li.agent[data-pane-key="{pane_key}"]')
    return rows[0].get_attribute("data-state") if rows else None


def _shot(driver: Any, name: str) -> bytes:
    png: bytes = driver.get_screenshot_as_png()
    SHOTS.mkdir(exist_ok=True)
    (SHOTS / f"{name}.png").write_bytes(png)
    return png


def _write(site: WebTree, session_id: str, data: bytes) -> None:
    invoke(ptyd.WRITE, ptyd.WriteArgs(session_id=session_id, data=data), paths=site.tree.paths)


def test_pairing_signs_in_and_the_code_leaves_the_address_bar(site: WebTree, page: Any) -> None:
    """The one-time code came in the fragment; the page traded it for a cookie the
    script cannot read, and took it out of the address bar."""
    assert "pair=" not in page.current_url
    assert page.execute_script("return document.cookie") == ""
    assert [c["name"] for c in page.get_cookies()] == ["orca_web"]
    (cookie,) = page.get_cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    worktrees = page.find_elements("css selector", "section.worktree")
    assert any(w.get_attribute("data-worktree-id").endswith("/fix-login") for w in worktrees)


def test_a_light_changes_on_the_board(site: WebTree, page: Any) -> None:
    """An agent reports working, then (one line of input later) done: the board's light
    follows, with the unread mark, without a reload."""
    agent = site.tree.new_terminal(site.worktree, "sh", str(FAKE_AGENT), str(site.hook_script))
    pane = agent["paneKey"]
    wait_for(page, lambda d: _agent_state(d, pane) == "working", "the agent working")
    _write(site, agent["sessionId"], b"go\n")
    wait_for(page, lambda d: _agent_state(d, pane) == "done", "the agent done")
    row = page.find_element("css selector", f'li.agent[data-pane-key="{pane}"]')
    assert row.find_element("css selector", ".light").text == "✓"
    assert row.find_elements("css selector", ".unread"), "a finished turn not seen yet"
    _shot(page, "board-done")


def test_typing_into_a_terminal_reads_its_echo(site: WebTree, page: Any) -> None:
    """Keys typed into the page's terminal reach the agent's PTY; its echo is drawn, in
    light on dark (a CSP that refused xterm's styles would leave no bright pixel)."""
    agent = site.tree.new_terminal(site.worktree, "sh", str(FAKE_AGENT), str(site.hook_script))
    _write(site, agent["sessionId"], b"first\n")  # past its prompt: it echoes from now on
    page.get(page.current_url.split("#")[0] + "#/term/" + agent["sessionId"])
    wait_for(page, lambda d: d.execute_script("return !!window.orcaTerminal"), "the terminal")
    wait_for(page, lambda d: "live" in d.find_element("id", "term-status").text, "attached")
    text = (
        "const b = window.orcaTerminal.buffer.active; let s = '';"
        "for (let i = 0; i < b.length; i++) { s += b.getLine(i).translateToString(true) + '\\n'; }"
        "return s;"
    )
    wait_for(page, lambda d: "agent: done" in d.execute_script(text), "the screen so far")
    page.find_element("css selector", ".xterm-helper-textarea").send_keys("hello web\n")
    wait_for(page, lambda d: "agent: echo hello web" in d.execute_script(text), "the echo")
    terminal = page.find_element("css selector", "#terminal .xterm-screen")
    shot = terminal.screenshot_as_png
    _shot(page, "terminal-echo")
    assert bright_pixels(shot, max_rows=120) > 200, "the terminal's text is not drawn visibly"
    # xterm.js's own rules (drawn into <style> elements the CSP must let in): its theme's
    # colour and a monospace cell grid, not the page's inherited text style.
    rows = "return getComputedStyle(document.querySelector('#terminal .xterm-rows'))"
    assert page.execute_script(rows + ".color") == "rgb(232, 232, 232)"
    assert "monospace" in page.execute_script(rows + ".fontFamily")
    assert not [e for e in console_errors(page) if "Content Security Policy" in e]


def test_approving_a_blocked_agent_from_the_page(site: WebTree, page: Any) -> None:
    """The agent's PermissionRequest is held; the page shows it (and notifies, since the
    page is not focused); Approve releases the agent, which runs the tool and is shown
    working; the ask is gone. A second ask, denied while the page has focus, raises no
    notification."""
    agent = site.tree.new_terminal(site.worktree, "sh", str(PERMISSION_AGENT), str(site.hook_script))
    pane = agent["paneKey"]
    page.get(page.current_url.split("#")[0] + "#/")
    wait_for(page, lambda d: _agent_state(d, pane) == "working", "the agent working")
    page.execute_script(
        "window.__notes = [];"
        "window.Notification = function (title, options) { window.__notes.push(options.body); };"
        "window.Notification.permission = 'granted';"
        "document.hasFocus = () => false;"
    )
    _write(site, agent["sessionId"], b"ask\n")
    card = f'section.ask[data-pane-key="{pane}"]'
    wait_for(page, lambda d: d.find_elements("css selector", card), "the ask")
    wait_for(page, lambda d: _agent_state(d, pane) == "blocked", "the agent blocked")
    assert "make deploy" in page.find_element("css selector", card).text
    notes = page.execute_script("return window.__notes")
    assert any("make deploy" in n for n in notes), notes
    _shot(page, "ask")
    page.find_element("css selector", f'{card} button[data-action="allow"]').click()
    wait_for(page, lambda d: not d.find_elements("css selector", card), "the ask gone")
    wait_for(page, lambda d: _agent_state(d, pane) == "working", "the agent working again")
    wait_until(lambda: b"agent: ran make deploy" in _output(site, agent["sessionId"]), "the tool run")
    _shot(page, "approved")

    page.execute_script("window.__notes = []; document.hasFocus = () => true;")
    _write(site, agent["sessionId"], b"ask\n")
    wait_for(page, lambda d: d.find_elements("css selector", card), "the second ask")
    page.find_element("css selector", f'{card} button[data-action="deny"]').click()
    wait_until(lambda: b"agent: denied" in _output(site, agent["sessionId"]), "the denial")
    assert page.execute_script("return window.__notes") == []


def _output(site: WebTree, session_id: str) -> bytes:
    read = invoke(ptyd.READ, ptyd.ReadArgs(session_id=session_id, since=0), paths=site.tree.paths)
    return bytes(read.data)


def _term_socket(site: WebTree, cookie: str, session_id: str, since: int | None = None) -> Any:
    import websocket

    query = "" if since is None else f"?since={since}"
    return websocket.create_connection(
        f"ws://127.0.0.1:{site.port}/ws/term/{session_id}{query}",
        cookie=cookie,
        origin=f"http://127.0.0.1:{site.port}",
        timeout=10,
    )


def _next_binary(ws: Any) -> tuple[int, int, bytes]:
    """(kind: 0 output / 1 screen, offset after it, bytes) of the next data frame."""
    while True:
        frame = ws.recv()
        if isinstance(frame, bytes):
            return frame[0], int.from_bytes(frame[1:9], "big"), frame[9:]


def test_a_reconnecting_terminal_resumes_by_offset(site: WebTree, page: Any) -> None:
    """A page's socket drops; what the agent printed meanwhile arrives on the next one,
    which names the offset it had shown: the bytes that followed, no redraw."""
    agent = site.tree.new_terminal(site.worktree, "sh", str(FAKE_AGENT), str(site.hook_script))
    sid = agent["sessionId"]
    _write(site, sid, b"first\n")
    wait_until(lambda: b"agent: done" in _output(site, sid), "the agent done")
    cookie = f"orca_web={page.get_cookie('orca_web')['value']}"
    first = _term_socket(site, cookie, sid)
    try:
        kind, shown, screen = _next_binary(first)
        assert kind == 1 and b"agent: done" in screen
    finally:
        first.close()
    _write(site, sid, b"second\n")
    wait_until(lambda: b"agent: echo second" in _output(site, sid), "the echo")
    again = _term_socket(site, cookie, sid, since=shown)
    try:
        got = b""
        while b"agent: echo second" not in got:
            kind, offset, data = _next_binary(again)
            assert kind == 0, "a resume within the scrollback is not redrawn"
            got += data
        assert got.startswith(b"second") and offset == shown + len(got)
    finally:
        again.close()


def test_a_view_only_device_cannot_type(site: WebTree, page: Any) -> None:
    """Keys from a device without ``type`` are dropped; a typing device's reach the PTY."""
    agent = site.tree.new_terminal(site.worktree, "sh", str(FAKE_AGENT), str(site.hook_script))
    sid = agent["sessionId"]
    _write(site, sid, b"first\n")
    wait_until(lambda: b"agent: done" in _output(site, sid), "the agent done")
    viewer = _term_socket(site, site.login("view"), sid)
    typist = _term_socket(site, f"orca_web={page.get_cookie('orca_web')['value']}", sid)
    try:
        assert '"type": false' in viewer.recv()
        assert '"type": true' in typist.recv()
        viewer.send('{"t": "in", "d": "from the viewer\\n"}')
        typist.send('{"t": "in", "d": "from the typist\\n"}')
        wait_until(lambda: b"agent: echo from the typist" in _output(site, sid), "the typist's keys")
        assert b"from the viewer" not in _output(site, sid)
    finally:
        viewer.close()
        typist.close()


def test_review_shows_the_worktrees_diff(site: WebTree, page: Any) -> None:
    """A change in the worktree is listed against its base, with its diff."""
    worktree = next(
        w for w in site.tree.json("worktree", "ls")["worktrees"] if w["path"].endswith("/fix-login")
    )
    Path(worktree["path"], "README").write_text("hello\nreviewed line\n")
    page.get(page.current_url.split("#")[0] + "#/review/" + worktree["id"])
    wait_for(page, lambda d: d.find_elements("css selector", '#files a[data-path="README"]'), "the file")
    wait_for(page, lambda d: "+reviewed line" in d.find_element("id", "diff").text, "the diff")
    added = page.find_element("css selector", "#diff .add")
    assert added.value_of_css_property("color") != page.find_element("id", "diff").value_of_css_property("color")
    _shot(page, "review")
