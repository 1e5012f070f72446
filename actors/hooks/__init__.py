"""The hooks actor: the agent-status table and the loopback hook endpoint (seed 03)."""
