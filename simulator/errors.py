"""The exceptions warpsweep raises for bad input; the CLI turns them into one-line messages."""


class WarpsweepError(Exception):
    """Base of every error caused by the user's input rather than a bug."""


class GraphError(WarpsweepError, ValueError):
    """A graph spec, file or array that cannot be turned into a valid CSR graph."""


class ConfigError(WarpsweepError, ValueError):
    """A strategy, device, algorithm or search-space setting that is not valid."""


class WarpsweepWarning(UserWarning):
    """Base of the warnings about the user's data (the CLI prints each as one line)."""
