"""The service's health as the UI's footer shows it: one light per process orcad reports.

The footer named the five actors the UI follows, hard-coded, while the tree runs more
(orch, gateway, vault, web when enabled, and the fd keeper): it now shows what
``orca status`` shows, from the same data (orcad's ``sup.snapshot`` and its
``actor.*`` events, mirrored): orcad by name, one dot per process under it and how
many are up, the ones that are not named with their state; the dormant ones (not
started until asked) apart, as no fault.

Where each state comes from (pure: the backend's liveness and mirror in, states out):

- the actors the UI follows (``backend.ACTORS``: their mirrors and heartbeats):
  ``down`` once silent for ``SILENT_AFTER_S``, else orcad's word for a child it says
  is not running (``starting``, ``backoff``, ``failed``, ``stopped``), else ``up``;
- every other child orcad lists: orcad's word (``running`` is ``up``) while orcad
  answers, ``unknown`` while it is silent (nobody else reports them);
- the fd keeper: ``up`` while orcad's last snapshot names its pid (no event reports
  the keeper; orcad restarts one that dies within milliseconds), ``down`` when it names
  none, ``unknown`` while orcad is silent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.text import Text

from actors.ui.mirrors import ServiceView

SUPERVISOR = "supervisor"
KEEPER = "keeper"
# The names ``orca status`` and ``orca restart`` use, where the actor's own differs.
SHOWN_AS: Mapping[str, str] = {SUPERVISOR: "orcad"}
UP = "up"
# Not started by orcad until a client asks for it (orch, gateway, vault: issue 36): not
# a fault, so not counted among the processes that should be up, and named apart.
DORMANT = "dormant"
# Not "●": that is a working agent's light in the sidebar (and what a reader of the
# screen counts as one).
DOT = "•"
DOT_COLOURS: Mapping[str, str] = {
    UP: "green",
    "starting": "yellow",
    "backoff": "yellow",
    "unknown": "grey50",
    DORMANT: "grey50",
}
NOT_UP_COLOUR = "red"  # down, failed, stopped


def followed_health(
    followed: Iterable[str], alive: Mapping[str, bool], service: ServiceView
) -> dict[str, str]:
    """Per actor the UI follows: ``up``, ``down`` (silent), or orcad's word for it while
    orcad answers and says it is not running."""
    health = {}
    for actor in followed:
        state = UP if alive.get(actor) else "down"
        status = service.actors.get(actor)
        said = status.state if status is not None and alive.get(SUPERVISOR) else "running"
        if actor != SUPERVISOR and said != "running":
            state = said
        health[actor] = state
    return health


def service_health(
    followed: Iterable[str], alive: Mapping[str, bool], service: ServiceView
) -> dict[str, str]:
    """Every process of the tree: orcad, the keeper, then orcad's children in its order
    (those the UI follows and orcad has not listed yet last)."""
    mine = followed_health(followed, alive, service)
    orcad_up = bool(alive.get(SUPERVISOR))
    health = {SUPERVISOR: mine.pop(SUPERVISOR, UP if orcad_up else "down")}
    if not orcad_up:
        health[KEEPER] = "unknown"
    else:
        health[KEEPER] = UP if service.keeper_pid else "down"
    for name, status in service.actors.items():
        if name in mine:
            health[name] = mine.pop(name)
        elif not orcad_up:
            health[name] = "unknown"
        else:
            health[name] = UP if status.state == "running" else status.state
    health.update(mine)
    return health


def shown_name(actor: str) -> str:
    return SHOWN_AS.get(actor, actor)


def footer_health(health: Mapping[str, str]) -> Text:
    """``orcad:up ••••••••• 8/9 up vault:backoff``: orcad by name (the root of the tree;
    its word is what the rest rests on), then a dot per process it supervises, coloured
    by its state, how many are up, and the name and state of each one that is not."""
    text = Text()
    if SUPERVISOR in health:
        state = health[SUPERVISOR]
        text.append(
            f"{shown_name(SUPERVISOR)}:{state} ", style="" if state == UP else NOT_UP_COLOUR
        )
    rest = {actor: state for actor, state in health.items() if actor != SUPERVISOR}
    for state in rest.values():
        text.append(DOT, style=DOT_COLOURS.get(state, NOT_UP_COLOUR))
    asleep = [actor for actor, state in rest.items() if state == DORMANT]
    up = sum(1 for state in rest.values() if state == UP)
    text.append(f" {up}/{len(rest) - len(asleep)} up")
    for actor, state in rest.items():
        if state not in (UP, DORMANT):
            text.append(f" {actor}:{state}", style=DOT_COLOURS.get(state, NOT_UP_COLOUR))
    if asleep:
        text.append(f" ({', '.join(asleep)}: dormant until asked)", style=DOT_COLOURS[DORMANT])
    return text
