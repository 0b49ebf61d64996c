"""A stand-in worker for tests: dies like a killed process on one marked task, else runs it.

It lives in its own module so that the spawned worker processes of the local pool can import it.
"""

from __future__ import annotations

import os
from typing import Any

from ssdlab.experiments.executors import execute_task

# The seed that marks the task whose worker "gets killed".
DEADLY_SEED = 666


def crash_on_deadly_seed(task: dict[str, Any]) -> dict[str, Any]:
    if task["seed"] == DEADLY_SEED:
        os._exit(9)  # no exception, no clean-up: what a SIGKILL or the OOM killer looks like
    return execute_task(task)
