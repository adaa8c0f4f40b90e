"""The range a seed takes, wherever one is given (a study, a sweep, a fit's random starts):
its own module so that verbs without Optuna (``measure``, ``calibrate``) can check it."""

MAX_SEED = 2**32 - 1  # numpy's RandomState, behind Optuna's samplers, takes no more
