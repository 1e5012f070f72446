"""The web dashboard and phone approvals (issue 27): a client actor serving HTTP(S)."""
