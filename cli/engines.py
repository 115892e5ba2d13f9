"""Where `mapc store` and `mapc convert DIR` run their workers: ``--engine local`` or ``--engine ray``.

An engine only schedules: ``engine.map(fn, items)`` runs ``fn`` on every item and yields ``(index, result)``
as each finishes; a result that is an exception means the worker running that item stopped (killed, out
of memory, a lost node).  What the workers do, and what the driver does with their results, is the same
for every engine (store/ingest.py, cli/corpus.py), so the results are too.

- ``local``: this process when there is one worker or one item, else a pool of ``--workers`` spawned
  processes on this machine.
- ``ray``: one Ray task per item, on a local Ray started for the job (``--workers`` CPUs), on the
  cluster named by ``--address`` (or ``RAY_ADDRESS``), or on the Ray this process already joined.
  Ray is the optional extra ``mapc[ray]``; it is imported only here, and only for ``--engine ray``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

if TYPE_CHECKING:
    from concurrent.futures import Future

# multiprocessing, concurrent.futures, socket, logging, signal and threading are imported where they are
# used: `mapc convert FILE` and `mapc validate` load this module for its options and never start a pool.

ENGINES = ("local", "ray")
CONNECT_TIMEOUT = 10.0
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray's single-machine mode, on 127.0.0.1
RAY_HINT = "the ray engine needs Ray, which is not installed: pip install 'mapc[ray]'"

F = TypeVar("F", bound=Callable[..., Any])


class Engine(Protocol):
    name: str
    parallelism: int

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, Any]]: ...


class LocalEngine:
    """This process, or a pool of `workers` spawned processes."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        self.parallelism = max(1, workers)

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        if self.parallelism <= 1 or len(items) <= 1:
            for index, item in enumerate(items):
                try:
                    result = fn(item)
                except Exception as exc:  # as from a pool: the item's worker stopped
                    result = exc
                yield index, result
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # spawn: workers start clean (never a copy of a threaded parent), on every platform, as direct
        # children, so their CPU time is the command's (RUSAGE_CHILDREN) once the pool is shut down
        context = multiprocessing.get_context("spawn")
        workers = min(self.parallelism, len(items))
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker)
        try:
            futures: dict[Future[Any], int] = {pool.submit(fn, item): i for i, item in enumerate(items)}
            for future in as_completed(futures):
                try:
                    yield futures[future], future.result()
                except Exception as exc:  # the worker died, or fn raised: that item's worker stopped
                    yield futures[future], exc
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _start_worker() -> None:
    """A worker process leaves Ctrl-C to the command: the terminal sends SIGINT to the whole process group,
    and the command stops the pool (each worker ends the batch it is on; no traceback of its own).  And it
    ends when the command is gone: a command killed outright (SIGKILL) cannot stop its pool, and each
    worker holds the pool's queue open itself, so it would wait for work forever."""
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


class RayEngine:
    """One Ray task (one CPU) per item; results are yielded as tasks finish."""

    name = "ray"

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self.parallelism = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        ray = self.ray
        task = ray.remote(num_cpus=1)(fn)
        refs = {task.remote(item): i for i, item in enumerate(items)}
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    try:
                        yield refs[ref], ray.get(ref)
                    except ray.exceptions.RayError as exc:  # fn raised, or its worker or node was lost
                        yield refs[ref], RuntimeError(_ray_reason(exc))
        finally:
            for ref in pending:
                ray.cancel(ref)


def _ray_reason(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _reachable(address: str) -> None:
    """A usage error, at once, when ``HOST:PORT`` (or ``ray://HOST:PORT``) does not accept a connection:
    Ray itself would retry for minutes.  ``auto`` and other forms are left to Ray."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        message = f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}"
        raise click.BadParameter(message, param_hint="--address") from None


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise click.BadParameter(RAY_HINT, param_hint="--engine") from None
    return ray


@contextmanager
def open_engine(name: str, address: str | None = None, workers: int | None = None) -> Iterator[Engine]:
    """The engine for ``--engine NAME [--address ADDR] [--workers N]``; a Ray started here is stopped after.

    Usage mistakes (exit 2): ``--address`` without ``--engine ray``, Ray not installed, a cluster that
    cannot be reached."""
    if name == "local":
        if address is not None:
            raise click.BadParameter("only the ray engine has an address: add --engine ray", param_hint="--address")
        yield LocalEngine(workers or os.cpu_count() or 1)
        return
    if address is None and not os.environ.get("RAY_ADDRESS"):
        # a Ray for this job only: on the loopback address, never on the machine's network interfaces
        # (read by Ray when it is imported, and inherited by its processes)
        os.environ.setdefault(LOOPBACK_ONLY, "0")
    import logging
    import warnings

    ray = _import_ray()
    # Ray's driver starts its helpers with fork + exec, which never runs lance in the child
    warnings.filterwarnings("ignore", message="lance is not fork-safe", category=UserWarning)
    started = False
    if not ray.is_initialized():
        options: dict[str, Any] = {
            "include_dashboard": False,
            "logging_level": logging.ERROR,
            "log_to_driver": False,
        }
        target = address or os.environ.get("RAY_ADDRESS")
        if target is None:
            options["num_cpus"] = workers or os.cpu_count() or 1  # a local Ray for this job
        else:
            _reachable(target)
        try:
            ray.init(address=address, **options)
        except Exception as exc:  # ConnectionError, ValueError, RuntimeError: the address is wrong or down
            where = address or os.environ.get("RAY_ADDRESS") or "a new local Ray"
            message = f"cannot start or reach Ray at {where}: {_ray_reason(exc)}"
            raise click.BadParameter(message, param_hint="--address") from None
        started = True
    try:
        yield RayEngine(ray)
    finally:
        if started:
            ray.shutdown()


def engine_options(command: F) -> F:
    """The ``--engine`` and ``--address`` options of the commands that run workers."""
    command = click.option(
        "--address",
        metavar="ADDR",
        default=None,
        help="With --engine ray: the Ray cluster to run on (ray://HOST:10001, HOST:6379 or auto; default: "
        "RAY_ADDRESS, else a local Ray of --workers CPUs).",
    )(command)
    return click.option(
        "--engine",
        type=click.Choice(ENGINES),
        default="local",
        show_default=True,
        help="Where workers run: local processes, or Ray tasks (pip install 'mapc[ray]').",
    )(command)
