"""Where the runs of a sweep execute: a local process pool, or a Ray cluster.

Both take the same tasks (a point's id, its configuration and job as the core's JSON, its seed)
and yield the same outcomes, so a sweep gives the same results wherever it runs. A task is a few
kilobytes of text: workers receive configurations, never large objects. An outcome holds the
result JSON and, if asked for, the per-request records; the driver writes them to disk at once
and keeps nothing.

A run that fails is an outcome with ``status = "failed"`` and the error, and the sweep goes on.
A worker process that dies (killed, out of memory) takes its run with it: the local executor
reruns each run that was in flight then alone, so only the run that kills a worker is recorded as
failed.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from .. import _core

Task = dict[str, Any]
Outcome = dict[str, Any]
Worker = Callable[[Task], Outcome]

EXECUTORS = ("local", "ray")


class ExecutorError(_core.SsdlabError):
    """An executor that cannot be used: unknown, Ray not installed, or its cluster unreachable."""


def _no_progress(done: int, total: int) -> None:
    """The core calls this about ten times a second; nothing to report from a worker."""


def _failed(task: Task, error: str, seconds: float = 0.0) -> Outcome:
    return {
        "id": task["id"],
        "status": "failed",
        "error": " ".join(error.split()),
        "result_json": None,
        "records": None,
        "worker": _worker_name(),
        "worker_seconds": seconds,
    }


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def execute_task(task: Task) -> Outcome:
    """Run one point. Never raises for a failing run: the error goes into the outcome."""
    start = time.perf_counter()
    run = _core.run_trace if task.get("kind") == "trace" else _core.run
    try:
        if task.get("kind") == "swap":
            # A paging run (ssdlab swap): the task's job is _core.swap's arguments. The
            # per-fault latencies and the swap trace it also returns are not kept.
            args = json.loads(task["job_json"])
            result_json, _, _ = _core.swap(
                args["device"],
                args["memory"],
                args["swap_size"],
                args["workload"],
                list(args["overrides"]),
                int(task["seed"]),
            )
            records = None
        else:
            result_json, records = run(
                task["config_json"],
                task["job_json"],
                int(task["seed"]),
                bool(task["record_requests"]),
                _no_progress,
                stats_interval=task.get("stats_interval"),
            )
    except Exception as error:  # a failing point is recorded, and the sweep goes on
        return _failed(task, f"{type(error).__name__}: {error}", time.perf_counter() - start)
    return {
        "id": task["id"],
        "status": "ok",
        "error": None,
        "result_json": result_json,
        "records": bytes(records) if records is not None else None,
        "worker": _worker_name(),
        "worker_seconds": time.perf_counter() - start,
    }


# How often a worker checks that the driver that started it is still alive, in seconds.
_PARENT_CHECK_S = 0.5


def _exit_with_parent(parent_pid: int) -> None:
    """End this worker once the driver is gone. A driver killed outright (``kill -9``, the OOM
    killer) closes no pool; its workers were reparented and ran on for good, each holding a run's
    memory. The check runs on a daemon thread, which the core lets run during a run (it releases
    the GIL)."""
    while True:
        time.sleep(_PARENT_CHECK_S)
        if os.getppid() != parent_pid:
            os._exit(1)


def _init_worker(parent_pid: int) -> None:
    # Ctrl-C reaches the whole process group; the driver alone handles it (and ends the workers).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The command turns SIGTERM into a Ctrl-C (cli.main); a worker ended by the driver with
    # SIGTERM just ends.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(
        target=_exit_with_parent, args=(parent_pid,), name="ssdlab-parent-watch", daemon=True
    ).start()


class LocalExecutor:
    """A pool of worker processes on this machine, one run per process at a time.

    ``workers`` defaults to the number of cores this process may use. At most ``2 × workers``
    tasks are handed out at once, so the pool never holds more than that many small task texts,
    and at most ``workers`` runs (and their memory) exist at any moment.
    """

    name = "local"

    def __init__(self, workers: int | None = None, worker: Worker = execute_task) -> None:
        self.workers = max(1, int(workers) if workers else _cores())
        self.worker = worker

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "workers": self.workers}

    def start(self) -> None:
        """Nothing to prepare: the pool starts with the first task."""

    def _pool(self) -> ProcessPoolExecutor:
        # spawn: a fresh interpreter per worker, untouched by the driver's threads (the
        # progress bar) and identical to what a worker on another machine would start with.
        context = multiprocessing.get_context("spawn")
        return ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(os.getpid(),),
        )

    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        queue: deque[Task] = deque(tasks)
        alone: deque[Task] = deque()  # in flight when a worker died: rerun one at a time
        limit = 2 * self.workers
        pool: ProcessPoolExecutor | None = None
        in_flight: dict[Future[Outcome], Task] = {}
        try:
            while queue or alone:
                if pool is None:
                    pool = self._pool()
                if alone:
                    task = alone.popleft()
                    try:
                        outcome = pool.submit(self.worker, task).result()
                    except BrokenProcessPool:
                        _end(pool)
                        pool = None
                        outcome = _failed(
                            task,
                            "the worker process running this point died (killed by a signal,"
                            " or out of memory)",
                        )
                    yield outcome
                    continue
                broken = False
                while (queue or in_flight) and not broken:
                    while queue and len(in_flight) < limit:
                        task = queue.popleft()
                        try:
                            in_flight[pool.submit(self.worker, task)] = task
                        except (BrokenProcessPool, OSError):
                            # OSError: a worker died and the pool, not yet marked broken,
                            # failed to start its replacement ("handle is closed").
                            queue.appendleft(task)
                            broken = True
                            break
                    if not in_flight:
                        break
                    done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                    for future in done:
                        task = in_flight.pop(future)
                        try:
                            outcome = future.result()
                        except BrokenProcessPool:
                            alone.append(task)
                            broken = True
                            continue
                        except Exception as error:  # e.g. an outcome that could not be sent
                            outcome = _failed(task, f"{type(error).__name__}: {error}")
                        yield outcome
                if broken:
                    alone.extend(in_flight.values())
                    in_flight.clear()
                    _end(pool)
                    pool = None
        finally:
            if pool is not None:
                if in_flight or queue or alone:
                    _end(pool)  # interrupted: stop the runs still going
                else:
                    pool.shutdown(wait=True)


def _end(pool: ProcessPoolExecutor) -> None:
    """Stop a pool now, ending its worker processes (and only those)."""
    processes = list(getattr(pool, "_processes", None) or {})
    workers = dict(getattr(pool, "_processes", None) or {})
    pool.shutdown(wait=False, cancel_futures=True)
    for pid in processes:
        process = workers.get(pid)
        if process is not None and process.is_alive():
            process.terminate()
    for pid in processes:
        process = workers.get(pid)
        if process is not None:
            process.join(timeout=10)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class RayExecutor:
    """Runs on a Ray cluster (``pip install 'ssdlab[ray]'``).

    ``address`` is passed to ``ray.init``: ``"auto"``, ``"HOST:PORT"`` of a running head, or
    ``"ray://HOST:10001"`` for Ray Client. Without one, a local Ray instance is started for the
    sweep and stopped after it. Every node needs the same ssdlab installed. Each task asks for
    one CPU and carries only its configuration and job text.
    """

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ExecutorError("the Ray executor needs Ray: pip install 'ssdlab[ray]'") from None
        self.address = address
        self.workers = workers
        self._started_here = False

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "address": self.address, "workers": self.workers}

    def start(self) -> None:
        """Connect to the cluster, or start a local Ray (then stopped after the sweep)."""
        import logging

        import ray

        if ray.is_initialized():
            return
        options: dict[str, Any] = {
            "include_dashboard": False,
            "logging_level": logging.WARNING,
            "log_to_driver": False,
        }
        if self.address is not None:
            _probe(self.address)
            options["address"] = self.address
        else:
            # "local": a new instance for this sweep, even if a cluster is already running here.
            options["address"] = "local"
            options["num_cpus"] = self.workers or _cores()
        try:
            ray.init(**options)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise ExecutorError(
                f"cannot reach a Ray cluster at {self.address or 'a new local instance'}:"
                f" {' '.join(str(error).split())}"
            ) from None
        self._started_here = True

    def run(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        import ray

        self.start()
        remote = ray.remote(num_cpus=1, max_retries=0)(execute_task)
        cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
        limit = 2 * (self.workers or cpus)
        queue: deque[Task] = deque(tasks)
        in_flight: dict[Any, Task] = {}
        try:
            while queue or in_flight:
                while queue and len(in_flight) < limit:
                    task = queue.popleft()
                    in_flight[remote.remote(task)] = task
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    task = in_flight.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except Exception as error:  # a task or worker that died inside Ray
                        first = " ".join(str(error).split())[:300]
                        outcome = _failed(task, f"Ray: {type(error).__name__}: {first}")
                    yield outcome
        finally:
            for ref in in_flight:
                try:
                    ray.cancel(ref, force=True)
                except Exception:  # already finished or gone: nothing to stop
                    pass
            if self._started_here:
                ray.shutdown()
                self._started_here = False


def _probe(address: str) -> None:
    """Fail at once on a HOST:PORT where nothing listens: ray.init would retry for minutes."""
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if address == "auto" or not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise ExecutorError(f"cannot reach a Ray cluster at {address}: {reason}") from None


def make_executor(
    name: str = "local", workers: int | None = None, address: str | None = None
) -> LocalExecutor | RayExecutor:
    if name == "local":
        if address is not None:
            raise ExecutorError("--address is for --executor ray")
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(address=address, workers=workers)
    raise ExecutorError(f"unknown executor {name!r}: expected one of {', '.join(EXECUTORS)}")
