"""The dashboard's request checks: Host, Origin, cookie, CSP (issue 27)."""

from __future__ import annotations

from actors.web.guard import (
    check_host,
    check_origin,
    content_security_policy,
    credential,
    session_cookie,
    site_for,
)
from orca.web_config import WebConfig


def test_hosts_are_the_bind_loopback_names_and_the_configured_ones() -> None:
    site = site_for(WebConfig(port=8765, hosts=("phone.lan",)), 8765)
    for ok in ("127.0.0.1:8765", "LOCALHOST:8765", "[::1]:8765", "phone.lan:8765"):
        assert check_host(site, ok) is None, ok
    for bad in (None, "", "127.0.0.1", "127.0.0.1:8766", "evil.example:8765", "phone.lan.evil:8765"):
        refusal = check_host(site, bad)
        assert refusal is not None and refusal.status == 421, bad


def test_a_default_port_may_be_left_out() -> None:
    site = site_for(WebConfig(bind="127.0.0.1", port=443, tls_certfile="c", tls_keyfile="k"), 443)
    assert check_host(site, "127.0.0.1") is None and site.cookie_name == "__Host-orca_web"


def test_origin_must_be_this_site_for_changes_and_sockets() -> None:
    site = site_for(WebConfig(), 8765)
    host = "127.0.0.1:8765"
    assert check_origin(site, "GET", host, None) is None
    assert check_origin(site, "POST", host, "http://127.0.0.1:8765") is None
    assert check_origin(site, "WEBSOCKET", host, "http://127.0.0.1:8765") is None
    for origin in (None, "null", "http://evil.example", "https://127.0.0.1:8765", "http://localhost:8765"):
        refusal = check_origin(site, "POST", host, origin)
        assert refusal is not None and refusal.status == 403, origin


def test_the_cookie_is_http_only_strict_and_read_back() -> None:
    site = site_for(WebConfig(), 8765)
    header = session_cookie(site, "abc.def")
    assert header.startswith("orca_web=abc.def;")
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= {p.strip() for p in header.split(";")}
    assert credential(site, "other=1; orca_web=abc.def") == "abc.def"
    assert credential(site, None) is None and credential(site, 'bad"cookie') is None
    assert "Max-Age=0" in session_cookie(site, "", clear=True)


def test_csp_allows_only_this_origin_and_the_nonce() -> None:
    csp = content_security_policy("N0NCE")
    assert "frame-ancestors 'none'" in csp and "style-src 'self' 'nonce-N0NCE'" in csp
    assert "'unsafe-inline'" not in csp and "default-src 'none'" in csp
