"""Extraction on a Dask cluster: ``kg build --engine dask [--scheduler tcp://HOST:8786]``.

Only per-paper extraction runs on the cluster. Papers go out in partitions; each worker builds
the Extractor once (``kg.pipeline.extractor`` is a per-process cache keyed by the trained model,
so only that name travels, never a spaCy object) and sends back offsets (``compact``), which are
expanded here in input order. The corpus-level steps then run from the project cache exactly as
after the local engine, so the exports are byte-identical whichever engine extracted.

Without a scheduler address a ``LocalCluster`` (worker processes on 127.0.0.1) is started for
the run and closed after it. Needs the extra: ``pip install 'kg[dask]'``.

>>> partitions(list(range(5)), 2)
[[0, 1], [2, 3], [4]]
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import CancelledError  # distributed's FutureCancelledError is one
from contextlib import contextmanager

from kg.errors import KgError, ServiceError
from kg.model import Extraction, Paper

PARTITION = 200  # papers per task: ~0.4 s of work, large next to the scheduler's ~1 ms a task
# Seconds the run waits for a worker when the cluster has none (at the start, or after every
# worker died) before it gives up; $KG_DASK_WORKER_WAIT overrides it.
WORKER_WAIT = 60.0
POLL = 1.0  # how often a wait checks that the cluster still has workers

INSTALL = "--engine dask needs Dask: pip install 'kg[dask]'"


def partitions(items: Sequence, size: int) -> list[list]:
    """``items`` cut into lists of ``size`` (the last may be shorter)."""
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def check_installed() -> None:
    """Raise a KgError saying how to install Dask when ``dask.distributed`` is missing."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise KgError(f"{INSTALL} (import failed: {exc})") from None


@functools.cache
def _version() -> str:
    from kg.project import pipeline_version

    return pipeline_version()


_LOCK = threading.Lock()  # one Extractor per process; a worker may run several threads


def _extract_partition(papers: list[Paper], trained_model: str | None
                       ) -> tuple[str, list[tuple | str]]:
    """Runs on a worker: this worker's pipeline version and each paper's compact extraction
    or failure message."""
    from kg.pipeline import _extract_safely, compact, extractor

    with _LOCK:  # spaCy and the matchers are not for concurrent use; the GIL gains nothing
        found = _extract_safely(extractor(trained_model), papers)
    return _version(), [e if isinstance(e, str) else compact(e) for e in found]


def _worker_wait() -> float:
    value = os.environ.get("KG_DASK_WORKER_WAIT", "")
    try:
        return float(value) if value else WORKER_WAIT
    except ValueError:
        raise KgError(f"KG_DASK_WORKER_WAIT={value!r}: give a number of seconds") from None


@contextmanager
def _client(scheduler: str | None, workers: int):
    """A Client of the scheduler at ``scheduler``, else of a LocalCluster made for the run."""
    check_installed()
    import logging

    # Reconnection attempts and shutdown chatter would bury the one-line kg error.
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        with _connect(scheduler, workers) as found:
            yield found
    finally:
        logger.setLevel(level)


@contextmanager
def _connect(scheduler: str | None, workers: int):
    from distributed import Client, LocalCluster

    if scheduler is None:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          host="127.0.0.1", dashboard_address=None) as cluster, \
                Client(cluster) as client:
            yield client, cluster.scheduler_address
        return
    try:
        client = Client(scheduler, timeout=10)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ServiceError(
            f"cannot reach the Dask scheduler at {scheduler} ({_why(exc)}); start one "
            f"(`dask scheduler`, then `dask worker {scheduler} --nthreads 1` on each machine) "
            "or leave out --scheduler to run a local cluster") from None
    with client:
        yield client, scheduler


def _why(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def extract_each(papers: Sequence[Paper], *, scheduler: str | None = None, workers: int = 2,
                 on_progress: Callable[[int], None] | None = None,
                 trained_model: str | None = None) -> Iterator[Extraction | str]:
    """Each paper's Extraction (before the corpus-level step), in input order, or a message
    saying why the extractor failed on that paper, as ``kg.pipeline.extract_each`` gives them,
    extracted on the Dask cluster at ``scheduler`` (else on a LocalCluster of ``workers``
    processes). A cluster that cannot be reached, has no workers, loses them all, runs another
    kg, or kills workers on a partition is a ServiceError naming the scheduler.

    >>> from kg.pipeline import read_papers
    >>> papers = read_papers(["examples/iclr2025-seed.txt"])[0]
    >>> found = list(extract_each(papers, workers=1))
    >>> [e.paper.id for e in found] == [p.id for p in papers]
    True
    """
    if not papers:
        return
    with _client(scheduler, workers) as (client, address):
        yield from _ordered(client, address, papers, on_progress, trained_model)


def _ordered(client, address: str, papers: Sequence[Paper],
             on_progress: Callable[[int], None] | None,
             trained_model: str | None) -> Iterator[Extraction | str]:
    from kg.pipeline import expand

    _wait_for_workers(client, address)
    # A bounded window of partitions in flight: enough to keep every worker busy while the
    # oldest is collected, few enough that memory does not grow with the corpus.
    window = 2 * max(1, sum(client.nthreads().values())) + 1
    parts = iter(partitions(papers, PARTITION))
    pending: deque = deque()
    expected = _version()
    while True:
        while len(pending) < window and (part := next(parts, None)) is not None:
            pending.append((part, client.submit(_extract_partition, part, trained_model,
                                                pure=False)))
        if not pending:
            return
        part, future = pending.popleft()
        version, found = _result(client, address, future, part)
        future.release()
        if version != expected:
            raise ServiceError(
                f"the Dask workers of {address} run another kg or vocabulary (pipeline "
                f"{version}; this kg is {expected}): install this kg on every worker, then "
                "run the command again")
        for paper, item in zip(part, found, strict=True):
            yield item if isinstance(item, str) else expand(paper, item)
        if on_progress:
            on_progress(len(part))


def _wait_for_workers(client, address: str) -> None:
    wait = _worker_wait()
    try:
        client.wait_for_workers(1, timeout=wait)
    except TimeoutError:
        raise ServiceError(
            f"the Dask scheduler at {address} has no workers (waited {wait:g} s, "
            f"KG_DASK_WORKER_WAIT); start some: `dask worker {address} --nthreads 1`") from None


def _result(client, address: str, future, part: list[Paper]):
    """The future's result; a lost scheduler, a partition that kills workers, or a cluster
    left without workers for longer than the wait is a ServiceError."""
    from distributed import KilledWorker

    wait = _worker_wait()
    alone_since: float | None = None
    where = f"papers {part[0].source or part[0].id} to {part[-1].source or part[-1].id}"
    while True:
        try:
            return future.result(timeout=POLL)
        except TimeoutError:
            pass
        except KilledWorker:
            raise ServiceError(
                f"Dask workers of {address} died while extracting {where}, most likely out "
                "of memory: give the workers more memory (e.g. `dask worker ... "
                "--memory-limit 4GB`) and run the command again (papers already extracted "
                "are kept)") from None
        except (OSError, CancelledError) as exc:
            raise _lost(address, exc) from None
        try:
            workers = client.nthreads()
        except (OSError, TimeoutError, CancelledError) as exc:
            raise _lost(address, exc) from None
        if workers:
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since > wait:
            raise ServiceError(
                f"every worker of the Dask scheduler at {address} is gone (none for "
                f"{wait:g} s while extracting {where}); start workers (`dask worker {address} "
                "--nthreads 1`) and run the command again (papers already extracted are kept)")


def _lost(address: str, exc: BaseException) -> ServiceError:
    return ServiceError(f"lost the Dask scheduler at {address} ({_why(exc)}); check that it "
                        "is still running, then run the command again (papers already "
                        "extracted are kept)")
