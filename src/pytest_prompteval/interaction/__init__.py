"""Conversations between the engine and scoring: the calls an item makes in rounds, each
decided by the answers before it (a code strategy's retries, an agent's tool loop and turns),
every one on the item's ledger."""
