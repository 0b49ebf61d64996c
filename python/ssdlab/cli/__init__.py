"""The ``ssdlab`` command line: ``main`` runs it (the console script and ``python -m ssdlab``).

One module per command group: ``app`` (run, demo, config, bench, the rest), ``trace``,
``experiments`` (sweep, plot, report, reproduce), ``nvme``; with the pieces they share: the
``--set`` option (``options``), progress bars (``progress``) and result tables (``table``).
"""

from .app import main

__all__ = ["main"]
