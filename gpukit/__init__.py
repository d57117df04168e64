"""gpukit: will it fit on one GPU, which tricks make it fit, when does a cluster pay off.

The package computes (pure calculators, real benchmarks); the notebooks in notebooks/ teach.
"""

__version__ = "0.1.0"
