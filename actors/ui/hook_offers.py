"""What the command palette offers for agent hooks: "Install hooks: AGENT" only for an
agent whose hooks are not (all) in place, read as ``orca hooks status`` reads them
(``orca.integrations.status``: every documented event wired, and for Codex trusted).

The palette used to offer all three agents whatever their state, so installing hooks
already installed looked like something to do. Reading three small config files is
done when the palette lists its commands, on the UI's thread (no actor is asked).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orca import integrations


@dataclass(frozen=True)
class HookOffer:
    agent: str
    title: str
    help: str


def hook_offers(home: Path) -> list[HookOffer]:
    """One offer per agent whose hooks are missing, partial, untrusted or unreadable
    (installing says why it cannot), in ``orca hooks status``'s order."""
    offers = []
    for agent in integrations.INTEGRATIONS:
        title = f"Install hooks: {agent}"
        try:
            status = integrations.status(agent, home)
        except integrations.UnreadableConfig as exc:
            offers.append(HookOffer(agent, title, f"its config cannot be read: {exc}"))
            continue
        if status.installed:
            continue
        if status.untrusted_events:
            why = "installed, not trusted by Codex: " + ", ".join(status.untrusted_events)
        elif status.installed_events:
            why = "partly installed, missing " + ", ".join(status.missing_events)
        else:
            why = f"agent status hooks, not installed in {status.config_path}"
        offers.append(HookOffer(agent, title, why))
    return offers
