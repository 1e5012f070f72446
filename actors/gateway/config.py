"""The gateway's settings: where it listens, ZAP restart delay, heartbeats.

Read once at start from ``<config dir>/gateway.toml`` (``[gateway]`` table), each key
overridable from the environment (orcad passes its environment to its actors)::

    [gateway]
    listen = "tcp://192.0.2.10:7710"   # "" (default): serve no remote client
    zap_restart_s = 1.0
    share_vault = false                # true: answer remote vault.search/usage/status

``ORCA_GATEWAY_LISTEN``, ``ORCA_GATEWAY_ZAP_RESTART_S``, ``ORCA_GATEWAY_SHARE_VAULT``
(``1`` / ``0``); heartbeats:
``ORCA_REMOTE_HEARTBEAT_IVL_S`` / ``ORCA_REMOTE_HEARTBEAT_TIMEOUT_S``
(``orca.remote.hosts``). ``ORCA_GATEWAY_FAULTS=1`` enables the fault-injection op.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from actors.gateway.listener import ListenerConfig
from orca.config_files import ConfigFileError, read_toml
from orca.contracts import gateway as gw
from orca.paths import OrcaPaths
from orca.remote.hosts import Heartbeats, HostConfigError, check_endpoint

CONFIG_FILE = "gateway.toml"
LISTEN_ENV = "ORCA_GATEWAY_LISTEN"
ZAP_RESTART_ENV = "ORCA_GATEWAY_ZAP_RESTART_S"
FAULTS_ENV = "ORCA_GATEWAY_FAULTS"
SHARE_VAULT_ENV = "ORCA_GATEWAY_SHARE_VAULT"


def _file_settings(paths: OrcaPaths) -> dict[str, Any]:
    path = paths.config_dir / CONFIG_FILE
    try:
        doc = read_toml(path, on_error="raise")
    except ConfigFileError as exc:
        raise HostConfigError(f"{path}: {exc.cause}") from None
    section = doc.get("gateway", {})
    return section if isinstance(section, dict) else {}


def load_config(paths: OrcaPaths, environ: Mapping[str, str] = os.environ) -> ListenerConfig:
    """The settings (``HostConfigError`` if the listen endpoint is not tcp://ADDR:PORT)."""
    settings = _file_settings(paths)
    listen = str(environ.get(LISTEN_ENV, settings.get("listen", "")))
    if listen:
        check_endpoint(listen)
    try:
        restart = float(environ.get(ZAP_RESTART_ENV, settings.get("zap_restart_s", 1.0)))
    except (TypeError, ValueError):
        restart = 1.0
    share = settings.get("share_vault", False)
    if SHARE_VAULT_ENV in environ:
        share = environ[SHARE_VAULT_ENV] == "1"
    elif not isinstance(share, bool):
        # The safe side: a value we cannot read shares nothing.
        logging.getLogger(__name__).error(
            "gateway.toml: share_vault must be true or false, not %r; not shared", share
        )
        share = False
    return ListenerConfig(
        listen=listen,
        local=paths.ipc_endpoint(gw.CONTRACT.actor, gw.LOCAL_SOCKET_KIND),
        beats=Heartbeats.from_env(environ),
        zap_restart_s=min(max(restart, 0.05), 60.0),
        faults_enabled=environ.get(FAULTS_ENV) == "1",
        share_vault=share,
    )
