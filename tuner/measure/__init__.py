"""`warpsweep measure`: the simulator's strategies as real CUDA kernels (kernels.cu, CuPy).

``plan``, ``check`` and ``record`` need no GPU; ``runner`` imports CuPy; ``measure`` imports
it only when a GPU run is asked for."""
