"""The web dashboard's settings and the rule on where it may listen (issue 27).

``config/web.toml`` (shipped) with ``<config dir>/web.toml`` on top, then the caller's
``--bind HOST[:PORT]``. Validated where parsed; a bad value is a :class:`WebConfigError`
naming the file and key, and the dashboard does not start (a web server that guessed
around a typo in its security settings is worse than none).

The exposure rule (:func:`check_exposure`): a loopback bind (127.0.0.0/8, ::1,
``localhost``) is always allowed; any other address only with a login ``token`` of at
least ``MIN_TOKEN_CHARS`` characters *and* TLS (a certificate and its key, both
readable). Nothing listens off loopback in plaintext or without a secret.

Shared by the CLI (``orca web`` refuses before starting anything) and the actor: pure
apart from reading the TOML files, no trio, nothing from ``actors/``.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orca.config_files import ConfigFileError, layered, shipped_path

CONFIG_NAME = "web.toml"
SHIPPED_CONFIG = shipped_path(CONFIG_NAME)
BIND_ENV = "ORCA_WEB_BIND"
# 32 characters of a random token are ~190 bits: past guessing, whatever the alphabet.
MIN_TOKEN_CHARS = 32
MAX_HOSTS = 32
_KEYS = {"bind", "port", "token", "tls_certfile", "tls_keyfile", "hosts"}


class WebConfigError(ValueError):
    """The web settings are invalid or unsafe; the message names the file and key."""


@dataclass(frozen=True)
class WebConfig:
    bind: str = "127.0.0.1"
    port: int = 8765
    token: str = ""
    tls_certfile: str = ""
    tls_keyfile: str = ""
    hosts: tuple[str, ...] = ()

    @property
    def tls(self) -> bool:
        return bool(self.tls_certfile and self.tls_keyfile)

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def url_host(self) -> str:
        """The bind address as a URL's host (an IPv6 literal in brackets)."""
        return f"[{self.bind}]" if ":" in self.bind else self.bind


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _apply(config: WebConfig, raw: dict[str, Any], where: Path) -> WebConfig:
    unknown_top = set(raw) - {"web"}
    if unknown_top:
        raise WebConfigError(f"{where}: unknown tables {sorted(unknown_top)}")
    web = raw.get("web", {})
    if not isinstance(web, dict):
        raise WebConfigError(f"{where}: [web] must be a table")
    unknown = set(web) - _KEYS
    if unknown:
        raise WebConfigError(f"{where}: [web] unknown keys {sorted(unknown)}")
    changes: dict[str, Any] = {}
    for key in ("bind", "token", "tls_certfile", "tls_keyfile"):
        if key in web:
            if not isinstance(web[key], str):
                raise WebConfigError(f"{where}: [web] {key} must be a string")
            changes[key] = web[key]
    if "port" in web:
        port = web["port"]
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise WebConfigError(f"{where}: [web] port must be an integer 0-65535 (0: any)")
        changes["port"] = port
    if "hosts" in web:
        hosts = web["hosts"]
        if not isinstance(hosts, list) or not all(isinstance(h, str) and h for h in hosts):
            raise WebConfigError(f"{where}: [web] hosts must be a list of host names")
        if len(hosts) > MAX_HOSTS:
            raise WebConfigError(f"{where}: [web] hosts: at most {MAX_HOSTS}")
        changes["hosts"] = tuple(h.lower() for h in hosts)
    return replace(config, **changes)


def cannot_listen(config: WebConfig, strerror: str) -> str:
    """Why the dashboard cannot listen where it is set to, and what to change (one line)."""
    where = f"{config.url_host()}:{config.port}"
    if "in use" in strerror:
        return (
            f"{where} is in use by another program: choose another port with"
            f" `orca web --bind {config.url_host()}:PORT` or `port` in {CONFIG_NAME}"
        )
    return f"cannot listen on {where}: {strerror}"


def parse_bind(value: str) -> tuple[str, int | None]:
    """``HOST``, ``HOST:PORT``, ``[V6]:PORT`` or ``:PORT`` → (host or "", port or None)."""
    value = value.strip()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port = rest.removeprefix(":") if rest.startswith(":") else ""
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
    else:
        host, port = value, ""
    if port and not port.isdigit():
        raise WebConfigError(f"--bind {value!r}: the port must be a number")
    number = int(port) if port else None
    if number is not None and number > 65535:
        raise WebConfigError(f"--bind {value!r}: the port must be 0-65535")
    return host, number


def load_web_config(
    config_dir: Path,
    *,
    bind: str | None = None,
    shipped: Path = SHIPPED_CONFIG,
    environ: dict[str, str] | None = None,
) -> WebConfig:
    """Shipped defaults, the user's keys, then ``bind`` (or ``ORCA_WEB_BIND``), checked
    with :func:`check_exposure`."""
    config = WebConfig()
    try:
        for path, raw in layered(CONFIG_NAME, config_dir, on_error="raise", shipped_file=shipped):
            config = _apply(config, raw, path)
    except ConfigFileError as exc:
        raise WebConfigError(f"{exc.path}: cannot be read: {exc.cause}") from None
    bind = bind or (os.environ if environ is None else environ).get(BIND_ENV)
    if bind:
        host, port = parse_bind(bind)
        config = replace(
            config, bind=host or config.bind, port=config.port if port is None else port
        )
    check_exposure(config)
    return config


def check_exposure(config: WebConfig) -> None:
    """Refuse a configuration that would listen unsafely (see the module docstring)."""
    if bool(config.tls_certfile) != bool(config.tls_keyfile):
        raise WebConfigError("web: tls_certfile and tls_keyfile go together (both or neither)")
    for key in ("tls_certfile", "tls_keyfile"):
        path = getattr(config, key)
        if path and not os.access(path, os.R_OK):
            raise WebConfigError(f"web: {key} {path!r} cannot be read")
    if config.token and len(config.token) < MIN_TOKEN_CHARS:
        raise WebConfigError(f"web: token must be at least {MIN_TOKEN_CHARS} characters")
    if not config.bind:
        raise WebConfigError("web: bind must name an address")
    if is_loopback(config.bind):
        return
    missing = [what for what, ok in (("a token", config.token), ("TLS", config.tls)) if not ok]
    if missing:
        raise WebConfigError(
            f"web: refusing to listen on {config.bind} (not loopback) without "
            + " and ".join(missing)
            + " (web.toml: token, tls_certfile, tls_keyfile)"
        )
