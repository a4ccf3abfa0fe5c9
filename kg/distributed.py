"""Extraction and the corpus-level plan on a Dask cluster: ``kg build --engine dask
[--scheduler tcp://HOST:8786]``.

Per-paper extraction runs on the cluster. Papers go out in partitions; each worker builds
the Extractor once (``kg.pipeline.extractor`` is a per-process cache keyed by the trained model,
so only that name travels, never the Extractor) and sends back offsets (``compact``), which are
expanded here in input order. The corpus-level steps then run from the project cache exactly as
after the local engine, so the exports are byte-identical whichever engine extracted.
``plan_on_cluster`` decides the same on the cluster: ``kg.resolve.plan``'s map steps over
partitions of papers and its reduces as group-bys keyed by term, short form, entity key and
entity id.

Without a scheduler address a ``LocalCluster`` (worker processes on 127.0.0.1) is started for
the run and closed after it. Needs the extra: ``pip install 'kg[dask]'``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import CancelledError  # distributed's FutureCancelledError is one
from contextlib import contextmanager
from itertools import chain
from pathlib import Path

from kg.errors import KgError, ServiceError
from kg.model import Extraction, Paper, compact, expand
from kg.pipeline import chunked, extract_safely, extractor
from kg.project import pipeline_version
from kg.resolve import (
    Key,
    Plan,
    Prep,
    acronyms,
    defined_forms,
    entity_keys,
    entity_table,
    forms_by_key,
    kept_terms,
    name_entity,
    number_entities,
    recurring_terms,
    surface_forms,
)
from kg.vocab import load_vocabulary

PARTITION = 200  # papers per task: ~0.4 s of work, large next to the scheduler's ~1 ms a task
# Seconds the run waits for a worker when the cluster has none (at the start, or after every
# worker died) before it gives up; $KG_DASK_WORKER_WAIT overrides it.
WORKER_WAIT = 60.0
POLL = 1.0  # how often a wait checks that the cluster still has workers
# Papers' Preps per partition of the plan: ~0.1 s of map steps, so a partition is one task's
# worth of work and its memory stays bounded however large the corpus.
PLAN_PARTITION = 5_000

INSTALL = "--engine dask needs Dask: pip install 'kg[dask]'"


def check_installed() -> None:
    """Raise a KgError saying how to install Dask when ``dask.distributed`` is missing."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise KgError(f"{INSTALL} (import failed: {exc})") from None


def _version() -> str:  # (read from the files each time: they may change under a process)
    return pipeline_version()


_LOCK = threading.Lock()  # one Extractor per process; a worker may run several threads


def _extract_partition(papers: list[Paper], trained_model: str | None
                       ) -> tuple[str, list[tuple | str]]:
    """Runs on a worker: this worker's pipeline version and each paper's compact extraction
    or failure message."""
    with _LOCK:  # the matchers are not for concurrent use; the GIL gains nothing
        found = extract_safely(extractor(trained_model), papers)
    return _version(), [e if isinstance(e, str) else compact(e) for e in found]


def _worker_wait() -> float:
    value = os.environ.get("KG_DASK_WORKER_WAIT", "")
    try:
        return float(value) if value else WORKER_WAIT
    except ValueError:
        raise KgError(f"KG_DASK_WORKER_WAIT={value!r}: give a number of seconds") from None


@contextmanager
def session(scheduler: str | None = None, workers: int = 2):
    """A ``(client, address)`` of the cluster at ``scheduler`` (else of a LocalCluster of
    ``workers`` processes made for the run). A build's extraction and plan share one, so a
    local cluster starts once."""
    check_installed()
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
    from distributed import Client, LocalCluster  # (Dask: the optional extra, imported on use)

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


def extract_each(papers: Iterable[Paper], *, scheduler: str | None = None, workers: int = 2,
                 on_progress: Callable[[int], None] | None = None,
                 trained_model: str | None = None,
                 connected: tuple | None = None) -> Iterator[Extraction | str]:
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
    for paper, item in extract_stream(papers, scheduler=scheduler, workers=workers,
                                      on_progress=on_progress, trained_model=trained_model,
                                      connected=connected):
        yield item if isinstance(item, str) else expand(paper, item)


def extract_stream(papers: Iterable[Paper], *, scheduler: str | None = None, workers: int = 2,
                   on_progress: Callable[[int], None] | None = None,
                   trained_model: str | None = None,
                   connected: tuple | None = None) -> Iterator[tuple[Paper, tuple | str]]:
    """Each paper with its extraction made compact, or the message saying why it failed, in
    input order (as ``kg.pipeline.extract_stream``), on the cluster as ``extract_each``.
    ``papers`` may be a stream: partitions are cut from it as the window has room."""
    papers = iter(papers)
    first = next(papers, None)
    if first is None:
        return
    papers = chain([first], papers)
    if connected is not None:  # a session's (client, address)
        yield from _ordered(*connected, papers, on_progress, trained_model)
        return
    with session(scheduler, workers) as (client, address):
        yield from _ordered(client, address, papers, on_progress, trained_model)


def _ordered(client, address: str, papers: Iterable[Paper],
             on_progress: Callable[[int], None] | None,
             trained_model: str | None) -> Iterator[tuple[Paper, tuple | str]]:
    _wait_for_workers(client, address)
    # A bounded window of partitions in flight: enough to keep every worker busy while the
    # oldest is collected, few enough that memory does not grow with the corpus (the input
    # is read only as the window has room).
    window = 2 * max(1, sum(client.nthreads().values())) + 1
    parts = chunked(papers, PARTITION)
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
        yield from zip(part, found, strict=True)
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
    from distributed import KilledWorker  # (Dask: the optional extra)

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


# ------------------------------------------------------------ the corpus-level plan on the cluster


def plan_on_cluster(preps: Sequence[Prep], client, *, vocabulary: Path | None = None,
                    npartitions: int | None = None) -> Plan:
    """``kg.resolve.plan(preps, load_vocabulary(vocabulary))``, computed on the Dask cluster of
    ``client`` (a ``distributed.Client``): the same map steps, one task per partition of
    papers (``npartitions``; by default two per worker thread, at most ``PLAN_PARTITION``
    papers each), and the same reduces, keyed by term key, short-form key, (entity key, form,
    long form) and entity id, each counted within a partition, then merged by key in a tree
    of tasks, as ``Bag.foldby`` does: no step pairs papers up, and past the partitions none
    holds more than one row a key. Per-paper results come back in the order of ``preps``.

    Only the vocabulary's folder (None: the installed one) travels; each worker loads it once
    (``load_vocabulary``). Workers whose kg or vocabulary differs from this process's are a
    ServiceError, as in extraction.

    >>> from distributed import Client, LocalCluster
    >>> from kg.pipeline import extract_each, read_papers
    >>> from kg.resolve import plan, prepare
    >>> papers = read_papers(["examples/iclr2025-seed.txt"])[0]
    >>> preps = [prepare(e) for e in extract_each(papers)]
    >>> with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster, \\
    ...         Client(cluster) as client:
    ...     plan_on_cluster(preps, client) == plan(preps)
    True
    """
    from dask import delayed  # (Dask: the optional extra)

    if not preps:
        return Plan((), (), {})
    address = client.scheduler.address
    _wait_for_workers(client, address)
    folder = str(vocabulary) if vocabulary is not None else None
    _check_workers(client, address, folder)
    if npartitions is None:
        npartitions = max(2 * sum(client.nthreads().values()),
                          -(-len(preps) // PLAN_PARTITION))
    # Scattered: the preps go to the workers as data, not inside the task graph. The graph
    # holds only their keys: the futures must live until the results are in.
    parts = client.scatter([_Rows(part) for part in
                            chunked(preps, -(-len(preps) // npartitions))], hash=False)
    # Papers per term key → the recurring terms, which every partition reads for its kept.
    terms = delayed(_recurring)(_merged(_add_counts,
                                        [delayed(_term_counts)(part) for part in parts]))
    kept = [delayed(_kept_terms)(part, terms) for part in parts]
    # Long forms per short-form key → the acronyms a free short form joins.
    joins = delayed(_acronyms)(_merged(_add_definitions, [
        delayed(_definitions)(part, keep) for part, keep in zip(parts, kept, strict=True)]))
    keyed = [delayed(_entity_keys)(part, keep, joins)
             for part, keep in zip(parts, kept, strict=True)]
    # Candidates per (entity key, form, long form) → each entity key's entity; then entity
    # keys per entity id → the id-collision rule.
    numbered = delayed(_number_entities)(_merged(_add_counts, [
        delayed(_form_counts)(part, keep, keys)
        for part, keep, keys in zip(parts, kept, keyed, strict=True)]), folder)
    ids = delayed(_id_map)(numbered)
    found = client.gather(client.compute(
        [*kept, *(delayed(_ids)(keys, ids) for keys in keyed),
         delayed(_entity_table)(numbered)]))
    n = len(parts)
    return Plan(tuple(chain.from_iterable(found[:n])),
                tuple(chain.from_iterable(found[n:2 * n])), dict(found[-1]))


def _check_workers(client, address: str, folder: str | None) -> None:
    expected = _plan_version(folder)
    found = client.run(_plan_version, folder)
    for worker, version in sorted(found.items()):
        if version != expected:
            raise ServiceError(
                f"the Dask workers of {address} run another kg or vocabulary ({worker} has "
                f"{version}; this kg has {expected}): install this kg and its vocabulary on "
                "every worker, then run the command again")


def _plan_version(folder: str | None) -> str:
    """What a plan depends on in this process: kg's pipeline version and the vocabulary that
    ``load_vocabulary`` gives for ``folder`` (read again when its files change: so is this)."""
    concepts = _vocabulary(folder).concepts
    digest = hashlib.sha256(repr(sorted(concepts.items())).encode("utf-8")).hexdigest()
    return f"{_version()} vocabulary {digest[:16]}"


def _vocabulary(folder: str | None):
    return load_vocabulary() if folder is None else load_vocabulary(Path(folder))


# The tasks of plan_on_cluster. What they return travels between processes: distributed sends
# a list, tuple, set or dict item by item (~20-50 µs an item: 1.2 s for four lists of 5,000
# empty tuples, against 6 ms whole), so rows go as _Rows and tables as _Table or Counter.


class _Rows(tuple):
    """A partition's rows: pickled whole."""

    __slots__ = ()


class _Table(dict):
    """A mapping: pickled whole."""

    __slots__ = ()


def _merged(combine: Callable, parts: list, every: int = 8):
    """``parts`` (Delayed) merged by ``combine`` in a tree, ``every`` at a time."""
    from dask import delayed  # (Dask: the optional extra)

    while len(parts) > 1:
        parts = [delayed(combine)(*parts[i:i + every]) for i in range(0, len(parts), every)]
    return parts[0]


def _term_counts(preps: _Rows) -> Counter[str]:
    return Counter(chain.from_iterable(prep.terms for prep in preps))


def _add_counts(*counts: Counter) -> Counter:
    total: Counter = Counter()
    for count in counts:
        total.update(count)
    return total


def _recurring(counts: Counter[str]) -> frozenset[str]:
    return recurring_terms(counts.items())


def _kept_terms(preps: _Rows, terms: frozenset[str]) -> _Rows:
    return _Rows(kept_terms(prep, terms) for prep in preps)


def _definitions(preps: _Rows, kept: _Rows) -> defaultdict[Key, set[Key]]:
    return defined_forms(preps, kept)


def _add_definitions(*parts: defaultdict[Key, set[Key]]) -> defaultdict[Key, set[Key]]:
    defined: defaultdict[Key, set[Key]] = defaultdict(set)
    for part in parts:
        for short, longs in part.items():
            defined[short] |= longs
    return defined


def _acronyms(defined: defaultdict[Key, set[Key]]) -> _Table:
    return _Table(acronyms(defined.items()))


def _entity_keys(preps: _Rows, kept: _Rows, joins: _Table) -> _Rows:
    return _Rows(entity_keys(prep, keep, joins) for prep, keep in zip(preps, kept, strict=True))


def _form_counts(preps: _Rows, kept: _Rows, keyed: _Rows) -> Counter:
    return Counter(chain.from_iterable(
        surface_forms(prep, keep, keys) for prep, keep, keys in zip(preps, kept, keyed,
                                                                    strict=True)))


def _number_entities(counts: Counter, folder: str | None) -> _Table:
    vocab = _vocabulary(folder)
    return _Table(number_entities((key, name_entity(key, forms, vocab))
                                  for key, forms in forms_by_key(counts.items()).items()))


def _id_map(numbered: _Table) -> _Table:
    return _Table({key: entity.id for key, entity in numbered.items()})


def _ids(keyed: _Rows, ids: _Table) -> _Rows:
    return _Rows(tuple(map(ids.__getitem__, keys)) for keys in keyed)


def _entity_table(numbered: _Table) -> _Table:
    return _Table(entity_table(numbered))
