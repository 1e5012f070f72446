"""Projections that more than one actor follows, each spelt once.

An actor follows one with ``ctx.mirror(SPEC, consumer=...)``
(:meth:`orca.actor.context.ActorContext.mirror`). A projection one actor alone reads
stays with that actor.
"""

from __future__ import annotations

from orca.actor.mirror import MirrorSpec
from orca.contracts import hooks

# Which agent session ran in which pane (``hooks.SessionBinding`` by ``BindingKey``):
# orch (a variant's capability) and the vault (whose transcript is whose) follow it.
# Narrow: the hooks' status and permission events are none of its business.
HOOKS_BINDINGS = MirrorSpec(
    hooks.CONTRACT,
    hooks.SESSION_BINDINGS,
    hooks.load_bindings_mirror,
    hooks.apply_binding,
    (hooks.SESSION_BOUND,),
    narrow=True,
)
