"""Bounds both the sandbox and the result hold to, in a module of their own: the sandbox's
servers import it without the result's dependencies (a server starts in every sandbox)."""

#: The most of an agent's diff a result keeps, in bytes (the verdict builds it within this).
MAX_DIFF = 1 << 20
