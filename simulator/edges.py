"""The raw edge list that generators and file loaders hand to normalisation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EdgeList:
    """Edges ``src[i] -> dst[i]`` over vertices 0..n-1, before normalisation.

    ``symmetric`` says the source defines the edges as undirected (a PACE ``.gr``, a symmetric
    Matrix Market file, a grid): a directed graph built from them stores both directions.
    ``lines`` optionally gives the file line of every edge, for error messages.
    """

    src: np.ndarray
    dst: np.ndarray
    n: int
    weights: np.ndarray | None = None
    symmetric: bool = False
    lines: np.ndarray | None = None

    @property
    def size(self) -> int:
        """Number of edge records."""
        return int(self.src.size)
