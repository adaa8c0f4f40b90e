"""Tuning: what a study is and how it runs (Optuna ask-and-tell), the samplers, the driver
loops and executors (in-process or Ray, batched on a cluster), sweeps, plans and progress."""
