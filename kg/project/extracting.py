"""Reading the papers a build is given into the project cache: each keyed by content as it
is read, those the cache lacks extracted in bounded batches while the input is still being
read (``Reader``), so a build never holds every Paper of a dump, only ids and keys.

>>> import contextlib, tempfile
>>> from kg.ingest import stream_papers
>>> from kg.project import pipeline_version
>>> from kg.project.cache import open_cache
>>> from pathlib import Path
>>> with open_cache(Path(tempfile.mkdtemp())) as (cache, _), contextlib.ExitStack() as stack:
...     read = Reader(cache, pipeline_version(), stack, few=5)
...     keys = read(stream_papers(["examples/iclr2025-seed.txt"]))
...     len(keys), read.extracted, len(cache.missing(keys.values()))
(19, 19, 0)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import Any

from kg.model import Extraction, Paper, Skip, compact, expand
from kg.pipeline import chunked, extract_safely, extract_stream, extractor
from kg.project import paper_key
from kg.project.cache import Cache
from kg.resolve import prepare


class Reader:
    """Reads the papers given to a build once, as a stream: each is keyed as it comes, and
    those the cache lacks are extracted in bounded batches while the input is still being
    read (each batch's rows stored as it ends, so a killed build keeps them). Of each paper
    only its id, content key and source (for messages) are kept, not its text: the cache
    holds the rest. Fewer than ``few`` new papers are left to the caller as Papers (a build
    extracts them in its own process: ``extract_few``).

    Its Dask session, if it starts one, is entered on ``stack``, for the plan to reuse."""

    def __init__(self, cache: Cache, pipeline: str, stack: contextlib.ExitStack, *,
                 workers: int = 1, on_progress: Callable[[int, int], None] | None = None,
                 trained_model: str | None = None, engine: str = "local",
                 scheduler: str | None = None, few: int = 100) -> None:
        self.cache, self.pipeline, self.stack = cache, pipeline, stack
        self.workers, self.on_progress, self.trained_model = workers, on_progress, trained_model
        self.engine, self.scheduler, self.few = engine, scheduler, few
        self.sources: dict[str, str] = {}  # paper id → where it was read, of every paper read
        self.new = 0  # papers read that the cache lacks
        self.extracted = 0  # of those, extracted while reading
        self._cluster: tuple | None = None

    def __call__(self, papers: Iterable[Paper]) -> dict[str, Paper | str]:
        """Paper id → content key of ``papers``, or the Paper where it is left to extract."""
        keys: dict[str, Paper | str] = {}
        new = self._new(papers, keys)
        head = list(islice(new, self.few))
        if len(head) < self.few:
            keys.update((p.id, p) for p in head)
            return keys
        self.extracted = extract_into(
            self.cache, chain(head, new), self.pipeline, self.workers, self.on_progress,
            self.trained_model, cluster=self.cluster() if self.engine == "dask" else None,
            total=lambda: self.new)
        return keys

    def _new(self, papers: Iterable[Paper], keys: dict[str, Paper | str]) -> Iterator[Paper]:
        """The papers the cache lacks, as read; every paper's key goes into ``keys``."""
        for batch in chunked(papers, 100):
            made = [paper_key(p, self.pipeline) for p in batch]
            missing = self.cache.missing(made)
            for paper, key in zip(batch, made, strict=True):
                keys[paper.id] = key
                self.sources[paper.id] = paper.source or paper.id
                if key in missing:
                    self.new += 1
                    yield paper

    def cluster(self) -> tuple:
        """The run's Dask session (started on first use; extraction and the plan share it)."""
        if self._cluster is None:
            self._cluster = self.stack.enter_context(
                dask_session(self.scheduler, self.workers))
        return self._cluster

    def named(self, skipped: Iterable[Skip]) -> tuple[Skip, ...]:
        """``skipped`` (named by paper id) named by where this run read each paper."""
        return tuple(Skip(self.sources.get(s.source, s.source), s.reason) for s in skipped)


def extract_into(cache: Cache, papers: Iterable[Paper], pipeline: str, workers: int,
                 on_progress: Callable[[int, int], None] | None, trained_model: str | None, *,
                 cluster: tuple | None = None, total: Callable[[], int] | None = None) -> int:
    """Extract ``papers`` and store each result (or failure) in the cache as it comes, so a
    killed build keeps what it has done; returns how many were extracted. ``papers`` may be
    a stream, read as extraction goes: ``total()`` then says how many have been read so far
    (for ``on_progress(done, total)``). ``cluster``, a ``kg.distributed.session``, extracts
    on that Dask cluster instead of local processes."""
    if total is None:
        papers = list(papers)
        count = len(papers)
        total = lambda: count  # noqa: E731 (a list: its length is the total)
    batch: list[tuple[str, Paper, tuple | str]] = []
    done = 0

    def progress(n: int) -> None:
        nonlocal done
        done += n
        if on_progress:
            on_progress(done, max(done, total()))

    if cluster is not None:
        from kg import distributed  # (Dask is imported only for --engine dask)

        items = distributed.extract_stream(papers, on_progress=progress,
                                           trained_model=trained_model, connected=cluster)
    else:
        items = extract_stream(papers, workers, progress, trained_model)
    for paper, found in items:
        batch.append((paper_key(paper, pipeline), paper, found))
        if len(batch) >= 500:
            cache.put(batch)
            batch = []
    cache.put(batch)
    return done


def cache_rows(papers: Sequence[Paper], items: Iterable, pipeline: str
               ) -> Iterator[tuple[str, Paper, tuple | str]]:
    """The cache row of each paper: its content key, the paper, and its extraction made
    compact (or the message saying why extraction failed)."""
    for paper, item in zip(papers, items, strict=True):
        yield (paper_key(paper, pipeline), paper,
               compact(item) if isinstance(item, Extraction) else item)


def extract_few(papers: list[Paper], pipeline: str, trained_model: str | None
                ) -> tuple[list[tuple[str, Paper, tuple | str]], list[tuple[str, Any]]]:
    """The cache rows of ``papers``' extractions (in one process), and the preps of those
    that succeeded (made as ``Resolved`` would make them)."""
    ex = extractor(trained_model)
    rows = list(cache_rows(papers, extract_safely(ex, papers), pipeline))
    return rows, [(key, prepare(expand(paper, found), ex.vocab)) for key, paper, found in rows
                  if not isinstance(found, str)]


def dask_session(scheduler: str | None, workers: int):
    from kg import distributed  # (Dask is imported only for --engine dask)

    return distributed.session(scheduler, workers)
