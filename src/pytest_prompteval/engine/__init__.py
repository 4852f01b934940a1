"""The engine: settings and the services that evaluate one item, wired once."""
