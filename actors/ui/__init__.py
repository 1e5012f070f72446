"""``orca ui``: the terminal UI, a client of the service that owns nothing (issue 17)."""
