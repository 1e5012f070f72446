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
from support.browser import bright_pixels, chromium, console_errors, png_pixels, wait_for
from support.remote import wait_until
from support.web import FAKE_AGENT, PERMISSION_AGENT, WebTree, stop_tree, web_tree

from actors.hooks.agent_events import ANSWER_IN_TERMINAL
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


# A phone (issue 32): a 390x844 viewport at one device pixel per CSS pixel (a screenshot's
# pixels are then the page's), laid out as a phone lays out (`width=device-width`).
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}


@pytest.fixture(scope="module")
def phone(site: WebTree) -> Iterator[Any]:
    """A second browser, emulating a phone, paired as its own device."""
    with chromium() as driver:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)
        driver.get(site.pair("view", "type", name="phone"))
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


def test_an_agent_asking_only_in_its_terminal_says_so_on_the_board(
    site: WebTree, page: Any
) -> None:
    """Gemini CLI's hooks hold no approval (its Notification says it asks): the board
    cannot answer it, so its blocked row says where it is answered (issue 40 item 8)."""
    ask = '{"hook_event_name":"Notification","notification_type":"ToolPermission","session_id":"g"}'
    script = f"printf '%s' '{ask}' | {site.hook_script} gemini; exec sleep 600"
    agent = site.tree.new_terminal(site.worktree, "/bin/sh", "-c", script)
    pane = agent["paneKey"]
    wait_for(page, lambda d: _agent_state(d, pane) == "blocked", "the agent blocked")
    row = page.find_element("css selector", f'li.agent[data-pane-key="{pane}"]')
    assert row.find_element("css selector", ".detail").text.startswith(ANSWER_IN_TERMINAL)
    _shot(page, "board-answer-in-terminal")


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
    try:
        wait_for(page, lambda d: d.find_elements("css selector", card), "the ask")
    except AssertionError as exc:  # (CI, once in 5 runs: say what the agent and hooks saw)
        from orca.contracts import hooks

        held = invoke(hooks.PERMISSION_SNAPSHOT, paths=site.tree.paths).pending
        raise AssertionError(
            f"{exc}\nagent's terminal: {_output(site, agent['sessionId'])!r}\nheld: {held!r}"
            f"\nboard: {page.execute_script('return document.body.innerText')!r}"
        ) from None
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


# -- one terminal, several screens (issue 32) ----------------------------------------------
def _open_terminal(driver: Any, session_id: str) -> None:
    """Show ``session_id``'s terminal (the page may be showing another: a hash change)."""
    driver.get(driver.current_url.split("#")[0] + "#/term/" + session_id)
    shown = f'#terminal[data-session-id="{session_id}"]'
    wait_for(driver, lambda d: d.find_elements("css selector", shown), "the terminal")
    wait_for(driver, lambda d: "live" in d.find_element("id", "term-status").text, "attached")


def _drawn_size(driver: Any) -> tuple[int, int]:
    """(cols, rows) of the page's own terminal (xterm.js's)."""
    cols, rows = driver.execute_script("return [window.orcaTerminal.cols, window.orcaTerminal.rows]")
    return int(cols), int(rows)


def _fits(driver: Any) -> tuple[int, int]:
    """(cols, rows) that fit the page's terminal area (addon-fit's proposal, as the page
    shows it in ``#terminal[data-fits]``)."""
    cols, rows = driver.find_element("id", "terminal").get_attribute("data-fits").split("x")
    return int(cols), int(rows)


def _pty_size(site: WebTree, driver: Any, session_id: str, marker: str) -> tuple[int, int]:
    """(cols, rows) the PTY has, as the shell in it reads it: ``stty size`` typed into
    the page's terminal, its answer read from ptyd's output (``rows cols``)."""
    driver.find_element("css selector", ".xterm-helper-textarea").send_keys(f"echo {marker}; stty size\n")
    answer = wait_until(
        lambda: _stty_answer(_output(site, session_id), marker), f"stty size after {marker}"
    )
    rows, cols = answer
    return cols, rows


def _stty_answer(output: bytes, marker: str) -> tuple[int, int] | None:
    lines = output.replace(b"\r", b"").split(b"\n")
    for i, line in enumerate(lines[:-1]):
        if line == marker.encode() and i + 1 < len(lines) - 1:
            rows, _, cols = lines[i + 1].partition(b" ")
            if rows.isdigit() and cols.isdigit():
                return int(rows), int(cols)
    return None


def _no_sideways_scroll(driver: Any) -> dict[str, list[int]]:
    """scrollWidth and clientWidth of the terminal's area, xterm's element and the page."""
    return dict(
        driver.execute_script(
            "const m = (e) => [e.scrollWidth, e.clientWidth];"
            "return {terminal: m(document.getElementById('terminal')),"
            " xterm: m(document.querySelector('#terminal .xterm')),"
            " page: m(document.documentElement)};"
        )
    )


def test_fit_on_a_phone_sizes_the_page_and_the_pty(site: WebTree, phone: Any, tmp_path: Path) -> None:
    """On a 390x844 phone, Fit makes the page's terminal exactly what fits its area and
    gives the PTY that size: no sideways scroll, ``stty size`` agrees, and a line typed
    is drawn whole inside the screen (checked in a screenshot's pixels)."""
    shell = site.tree.new_terminal(site.worktree, "sh")
    sid = shell["sessionId"]
    _open_terminal(phone, sid)
    size = phone.find_element("id", "term-size")
    wait_for(phone, lambda d: size.get_attribute("data-fits-here") == "false", "the size hint")
    assert "sized by another client" in size.text, size.text  # ptyd's 80x24 does not fit
    phone.find_element("id", "fit").click()
    wait_for(phone, lambda d: size.get_attribute("data-fits-here") == "true", "the fitted size")
    cols, rows = _drawn_size(phone)
    assert (cols, rows) == _fits(phone)
    assert cols >= 40, f"only {cols} columns on a 390 px phone"
    assert _pty_size(site, phone, sid, "FIT-1") == (cols, rows)
    widths = _no_sideways_scroll(phone)
    assert all(scroll <= client for scroll, client in widths.values()), widths

    phone.find_element("css selector", ".xterm-helper-textarea").send_keys("echo READABLE-TEXT-LINE\n")
    rows_text = "return document.querySelector('#terminal .xterm-rows').textContent"
    wait_for(phone, lambda d: d.execute_script(rows_text).count("READABLE-TEXT-LINE") >= 2, "the echo")
    # Where the printed line is drawn (a Range over its text), in the viewport's pixels.
    box = phone.execute_script(
        "const rows = [...document.querySelectorAll('#terminal .xterm-rows > div')];"
        "const row = rows.find((r) => r.textContent.trim() === 'READABLE-TEXT-LINE');"
        "const range = document.createRange(); range.selectNodeContents(row);"
        "const text = [...range.getClientRects()].filter((r) => r.width > 0);"
        "const area = document.getElementById('terminal').getBoundingClientRect();"
        "return {left: Math.min(...text.map((r) => r.left)), right: Math.max(...text.map((r) => r.right)),"
        " top: Math.min(...text.map((r) => r.top)), bottom: Math.max(...text.map((r) => r.bottom)),"
        " areaLeft: area.left, areaRight: area.right, viewport: window.innerWidth};"
    )
    assert box["areaLeft"] <= box["left"] < box["right"] <= box["areaRight"] <= box["viewport"], box
    png = phone.get_screenshot_as_png()
    (tmp_path / "phone-fit.png").write_bytes(png)
    _shot(phone, "phone-fit")
    width, _height, pixels = png_pixels(png, max_rows=int(box["bottom"]) + 1)
    assert width == box["viewport"] == PHONE["width"]
    left, right = int(box["left"]), int(box["right"]) + 1
    band = [row[left * 3 : right * 3] for row in pixels[int(box["top"]) :]]
    bright = sum(
        1 for row in band for i in range(0, len(row), 3) if min(row[i], row[i + 1], row[i + 2]) > 150
    )
    assert bright > 50, "the typed line is not drawn where the page says it is"


def test_a_fitted_phone_fits_again_when_turned(site: WebTree, phone: Any) -> None:
    """A page that took the size (Fit) keeps it fitted: the phone turned sideways, its
    terminal and the PTY take what fits the new area."""
    shell = site.tree.new_terminal(site.worktree, "sh")
    sid = shell["sessionId"]
    _open_terminal(phone, sid)
    phone.find_element("id", "fit").click()
    size = phone.find_element("id", "term-size")
    wait_for(phone, lambda d: size.get_attribute("data-fits-here") == "true", "the fitted size")
    upright = _drawn_size(phone)
    turned = {**PHONE, "width": PHONE["height"], "height": PHONE["width"]}
    phone.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", turned)
    try:
        wait_for(
            phone,
            lambda d: _drawn_size(d) != upright and _drawn_size(d) == _fits(d),
            "the terminal fitted to the turned screen",
        )
        assert _pty_size(site, phone, sid, "TURNED") == _drawn_size(phone)
        widths = _no_sideways_scroll(phone)
        assert all(scroll <= client for scroll, client in widths.values()), widths
    finally:
        phone.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", PHONE)


def test_the_client_that_resized_last_sets_the_size(site: WebTree, page: Any, phone: Any) -> None:
    """One terminal on a desktop page and a phone: the phone's Fit sizes the PTY and the
    desktop page draws at that size, saying it was sized by another client; the desktop's
    Fit takes the size back and the phone follows, offering its own Fit."""
    shell = site.tree.new_terminal(site.worktree, "sh")
    sid = shell["sessionId"]
    _open_terminal(page, sid)
    _open_terminal(phone, sid)
    phone.find_element("id", "fit").click()
    phone_size = wait_for(phone, lambda d: _drawn_size(d) == _fits(d) and _drawn_size(d), "the phone fitted")
    wait_for(page, lambda d: _drawn_size(d) == phone_size, "the desktop drawing at the phone's size")
    hint = page.find_element("id", "term-size")
    assert hint.get_attribute("data-fits-here") == "false"
    assert "sized by another client" in hint.text and "Fit to take it" in hint.text, hint.text
    _shot(page, "desktop-sized-by-phone")

    page.find_element("id", "fit").click()
    desktop_size = wait_for(page, lambda d: _drawn_size(d) == _fits(d) and _drawn_size(d), "the desktop fitted")
    assert desktop_size != phone_size
    wait_for(phone, lambda d: _drawn_size(d) == desktop_size, "the phone drawing at the desktop's size")
    assert _pty_size(site, page, sid, "DESKTOP") == desktop_size
    phone_hint = phone.find_element("id", "term-size")
    assert phone_hint.get_attribute("data-fits-here") == "false"
    assert phone.find_element("id", "fit").is_displayed()
    _shot(phone, "phone-sized-by-desktop")
