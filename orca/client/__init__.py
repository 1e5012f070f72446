"""Clients: ``orca.client.sync`` (blocking, for the CLI); async ones live in ``orca.actor``."""
