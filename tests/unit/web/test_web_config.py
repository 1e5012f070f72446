"""Where the dashboard may listen: loopback, or a token and TLS (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orca.web_config import WebConfigError, check_exposure, is_loopback, load_web_config, parse_bind

TOKEN = "k" * 32


def _load(tmp_path: Path, text: str, bind: str | None = None):  # type: ignore[no-untyped-def]
    (tmp_path / "web.toml").write_text(text)
    return load_web_config(tmp_path, bind=bind, environ={})


def test_the_shipped_default_is_loopback(tmp_path: Path) -> None:
    config = load_web_config(tmp_path, environ={})
    assert (config.bind, config.port, config.token, config.tls) == ("127.0.0.1", 8765, "", False)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"])
def test_loopback_needs_nothing(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    ("text", "bind", "needle"),
    [
        ("", "0.0.0.0:8080", "without a token and TLS"),
        (f'[web]\ntoken = "{TOKEN}"\n', "0.0.0.0", "without TLS"),
        ("", "192.0.2.10", "without a token and TLS"),
        ("", "[::]:80", "without a token and TLS"),
        ('[web]\ntoken = "short"\n', None, "at least 32"),
        ('[web]\ntls_certfile = "/nonexistent.pem"\n', None, "both or neither"),
        ('[web]\nport = 70000\n', None, "0-65535"),
        ('[web]\nbind = 5\n', None, "must be a string"),
        ('[web]\nlisten = "x"\n', None, "unknown keys"),
        ("", "host:notaport", "must be a number"),
    ],
)
def test_unsafe_or_broken_settings_are_refused(tmp_path: Path, text: str, bind: str | None, needle: str) -> None:
    with pytest.raises(WebConfigError, match=needle):
        _load(tmp_path, text, bind)


def test_off_loopback_with_token_and_tls_is_allowed(tmp_path: Path) -> None:
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("x")
    key.write_text("x")
    text = f'[web]\ntoken = "{TOKEN}"\ntls_certfile = "{cert}"\ntls_keyfile = "{key}"\n'
    config = _load(tmp_path, text, "0.0.0.0:8443")
    assert (config.bind, config.port, config.scheme) == ("0.0.0.0", 8443, "https")
    check_exposure(config)


def test_bind_forms() -> None:
    assert parse_bind("127.0.0.1:9") == ("127.0.0.1", 9)
    assert parse_bind(":9") == ("", 9)
    assert parse_bind("[::1]:9") == ("::1", 9)
    assert parse_bind("localhost") == ("localhost", None)
