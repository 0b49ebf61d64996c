"""Experiments over many runs: sweep files and their points (``sweep``), running them into a
directory on local processes or a Ray cluster (``runner``, ``executors``), the results table
(``results``), and plots and reports drawn from it (``plots``, ``report``).
"""

from .results import load_results
from .runner import run_sweep
from .sweep import Sweep, SweepError

__all__ = ["Sweep", "SweepError", "load_results", "run_sweep"]
