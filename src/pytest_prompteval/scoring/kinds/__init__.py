"""Scorer kinds: what decides an item's main score. Each kind is one object behind the
``ScorerKind`` protocol (``protocol.py``), registered by name (``registry.py``); the engine
chooses an item's kind from the registry and scores through the protocol alone."""
