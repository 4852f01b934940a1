"""The pytest glue: items, calls sent ahead, batches, the fixture, third-party adapters."""
