"""The adaptive selector (graph features -> configuration), its model file, and
per-iteration adaptation (the oracle and the learned policy)."""
