"""Driving agentic CLIs (Claude Code) through augur: a pinned npm
install into the cache, a recording proxy, and readers for what went over the wire."""
