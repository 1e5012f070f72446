"""The wire: one MessagePack codec, request/reply/event envelopes, typed op schemas."""
