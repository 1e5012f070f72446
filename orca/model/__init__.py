"""Pure domain model and identity rules shared by every actor and client (no I/O)."""
