"""The hooks actor: the agent-status store and the loopback hook endpoint (seed 03)."""
