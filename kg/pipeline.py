"""The whole run: ingest → extract → resolve, with optional worker processes.

>>> corpus = run(["examples/iclr2025-seed.txt"])
>>> len(corpus), corpus.skipped
(19, ())
"""

from __future__ import annotations

import json
import multiprocessing as mp
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import chain, islice
from pathlib import Path
from typing import Any, NamedTuple

from kg.errors import InputError, StrictModeError
from kg.exports import check_export_file
from kg.ingest import IngestOptions, Tally, provisional_label, read_inputs, stream_papers
from kg.io import merge_corpora, read_jsonl
from kg.model import (  # (compact, expand: also kg.pipeline's, as they were)
    Corpus,
    Extraction,
    Paper,
    Skip,
    compact,
    expand,
)

_WORKER = None  # the per-process Extractor


def _init_worker(trained_model: str | None) -> None:
    global _WORKER
    _WORKER = extractor(trained_model)


_EXTRACTORS: dict[str | None, Any] = {}  # this process's Extractor of each model


def extractor(trained_model: str | None = None):
    """One Extractor per process and model (building the default one takes 0.15 s), built
    again when the vocabulary files change."""
    from kg.vocab import load_vocabulary  # (with kg.extract, 0.1 s: only to extract)

    vocab = load_vocabulary()
    found = _EXTRACTORS.get(trained_model)
    if found is None or found.vocab is not vocab:
        from kg.extract import Extractor  # (0.1 s: only to extract)

        _EXTRACTORS[trained_model] = found = Extractor(vocab, model=trained_model or "none")
    return found


def extract_safely(ex, papers: list[Paper]) -> list[Extraction | str]:
    """Each paper's Extraction, or a message saying why that one paper failed.

    A record the extractor cannot handle must cost the run that record, not the run: the chunk
    is retried one paper at a time and the failing papers are reported.
    """
    try:
        return list(ex.extract(papers))
    except Exception:  # whatever one record trips, the other records go on
        out: list[Extraction | str] = []
        for paper in papers:
            try:
                out.append(ex.extract_one(paper))
            except Exception as exc:
                out.append(f"extraction failed ({type(exc).__name__}: {str(exc)[:200]}); "
                           "remove or shorten the record, and report it if it looks ordinary")
        return out


def _extract_chunk(papers: list[Paper]) -> list[tuple | str]:
    # The parent holds the papers, so only offsets travel back: pickling texts twice would cost
    # the parent more CPU than the second worker saves on two cores.
    return [e if isinstance(e, str) else compact(e) for e in extract_safely(_WORKER, papers)]


CHUNK = 50  # papers per task of a worker process


def chunked(items: Iterable, size: int) -> Iterator[list]:
    """``items`` in lists of ``size`` (the last shorter), taken from ``items`` as needed.

    >>> list(chunked(iter(range(5)), 2))
    [[0, 1], [2, 3], [4]]
    """
    items = iter(items)
    while part := list(islice(items, size)):
        yield part


def extract_all(
    papers: Iterable[Paper],
    workers: int = 1,
    on_progress: Callable[[int], None] | None = None,
    trained_model: str | None = None,
    skipped: list[Skip] | None = None,
) -> list[Extraction]:
    """Extract every paper, in input order; ``workers > 1`` uses that many processes.

    A paper the extractor fails on is left out and reported as a Skip on ``skipped``
    (without that list, the failure is raised as an InputError). Then the corpus-level step:
    terms that wait for the corpus are kept where another paper of the same run uses them too.
    """
    from kg.extract.terms import promote_recurring  # (0.1 s: only to extract)

    return promote_recurring(_extract_each(papers, workers, on_progress, trained_model,
                                           skipped))


def _extract_each(papers: Iterable[Paper], workers: int,
                  on_progress: Callable[[int], None] | None, trained_model: str | None,
                  skipped: list[Skip] | None) -> list[Extraction]:
    out: list[Extraction] = []
    for paper, found in extract_stream(papers, workers, on_progress, trained_model):
        if not isinstance(found, str):
            out.append(expand(paper, found))
        elif skipped is None:
            raise InputError(f"{paper.source or paper.id}: {found}")
        else:
            skipped.append(Skip(paper.source or paper.id, found))
    return out


def extract_each(papers: Iterable[Paper], workers: int = 1,
                 on_progress: Callable[[int], None] | None = None,
                 trained_model: str | None = None) -> Iterator[Extraction | str]:
    """Each paper's Extraction (before the corpus-level step), in input order, or a message
    saying why the extractor failed on that paper; ``workers > 1`` uses that many processes.
    ``papers`` may be a stream: it is read as extraction goes (``extract_stream``)."""
    for paper, found in extract_stream(papers, workers, on_progress, trained_model):
        yield found if isinstance(found, str) else expand(paper, found)


def extract_stream(papers: Iterable[Paper], workers: int = 1,
                   on_progress: Callable[[int], None] | None = None,
                   trained_model: str | None = None) -> Iterator[tuple[Paper, tuple | str]]:
    """Each paper with its extraction made compact (``kg.model.compact``), or the message
    saying why the extractor failed on it, in input order.

    ``papers`` is read as extraction goes: with ``workers > 1``, at most ``2 * workers + 1``
    chunks of ``CHUNK`` papers are in flight, so a stream of any length is extracted in
    bounded memory while its reading overlaps the extraction. Fewer than ``2 * CHUNK``
    papers are extracted in this process (starting processes would cost more).

    >>> from kg.ingest import stream_papers
    >>> found = list(extract_stream(stream_papers(["examples/iclr2025-seed.txt"])))
    >>> len(found), isinstance(found[0][1], tuple)
    (19, True)
    """
    papers = iter(papers)
    head = list(islice(papers, 2 * CHUNK)) if workers > 1 else []
    if workers <= 1 or len(head) < 2 * CHUNK:
        ex = None  # (built for the first paper: a `kg remove` extracts none, and spaCy's
        # import and the pipeline's construction cost it 2.7 s)
        for part in chunked(chain(head, papers), CHUNK):
            ex = ex or extractor(trained_model)
            for paper, found in zip(part, extract_safely(ex, part), strict=True):
                yield paper, found if isinstance(found, str) else compact(found)
            if on_progress:
                on_progress(len(part))
        return
    ctx = mp.get_context("fork" if sys.platform != "win32" else "spawn")
    window = 2 * workers + 1  # enough to keep every worker busy while the oldest is collected
    with ctx.Pool(workers, initializer=_init_worker, initargs=(trained_model,)) as pool:
        pending: deque = deque()
        # (Pool.imap would read the whole input ahead of the workers: its feeder thread
        # consumes the iterable as fast as it can. A window keeps what is read bounded.)
        for part in chunked(chain(head, papers), CHUNK):
            pending.append((part, pool.apply_async(_extract_chunk, (part,))))
            if len(pending) >= window:
                yield from _collected(pending.popleft(), on_progress)
        while pending:
            yield from _collected(pending.popleft(), on_progress)


def _collected(sent: tuple[list[Paper], Any], on_progress: Callable[[int], None] | None
               ) -> Iterator[tuple[Paper, tuple | str]]:
    part, result = sent
    yield from zip(part, result.get(), strict=True)
    if on_progress:
        on_progress(len(part))


def run(
    inputs: Sequence[str | Path],
    *,
    strict: bool = False,
    workers: int = 1,
    progress: bool = False,
    options: IngestOptions | None = None,
    notices: list[str] | None = None,
    trained_model: str | None = None,
) -> Corpus:
    """Ingest, extract and resolve ``inputs``; skipped records are kept on ``Corpus.skipped``.

    With ``strict=True`` any skip raises StrictModeError instead.
    """
    from kg.resolve import resolve  # (imports kg.extract, 0.1 s: only to extract)

    ingested = read_inputs(inputs, options or IngestOptions())
    if notices is not None:
        notices.extend(ingested.notices)
    if strict and ingested.skipped:
        details = "\n".join(f"  {s.source}: {s.reason}" for s in ingested.skipped[:20])
        raise StrictModeError(f"{len(ingested.skipped)} record(s) skipped (--strict):\n{details}")
    if not ingested.papers:
        details = "\n".join(f"  {s.source}: {s.reason}" for s in ingested.skipped[:20])
        raise InputError("no papers to process" + (f":\n{details}" if details else
                                                    " (the inputs are empty)"))
    failed: list[Skip] = []
    if progress:
        from kg.progress import Progress, step  # (on a terminal only)

        with Progress(len(ingested.papers), "extracting") as bar:
            extractions = extract_all(ingested.papers, workers, bar.update, trained_model,
                                      skipped=failed)
        step(f"resolving entities across {len(extractions):,} papers")
    else:
        extractions = extract_all(ingested.papers, workers, trained_model=trained_model,
                                  skipped=failed)
    if strict and failed:
        details = "\n".join(f"  {s.source}: {s.reason}" for s in failed[:20])
        raise StrictModeError(f"{len(failed)} record(s) skipped (--strict):\n{details}")
    return resolve(extractions, skipped=(*ingested.skipped, *failed))


def is_extraction_file(path: Path) -> bool:
    """True when ``path`` is a kg extraction JSONL (first object has "paper" and "entities")."""
    if path.suffix.lower() not in (".jsonl", ".ndjson") or not path.is_file():
        return False
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    first = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(first, dict) and "paper" in first and "entities" in first
    return False


def load_corpus(inputs: Iterable[str | Path], **kwargs) -> Corpus:
    """A Corpus from extraction JSONL files / export dirs (read back) or raw inputs (run).

    >>> load_corpus(["examples/iclr2025-seed.txt"]).results[0].paper.label[:5]
    'LOTOS'
    """

    raw: list[str | Path] = []
    loaded: list[Corpus] = []
    for item in inputs:
        path = Path(item)
        if str(item) != "-" and path.is_dir():
            from kg.project import open_project  # (kg.project reads kg.pipeline's cache rows)

            if kwargs.get("progress"):
                from kg.progress import step

                step(f"reading {path}")
            loaded.append(open_project(path).corpus())
        elif str(item) != "-" and is_extraction_file(check_export_file(path)):
            loaded.append(read_jsonl(path))
        else:
            raw.append(item)
    if raw:
        loaded.append(run(raw, **kwargs))
    if not loaded:
        raise InputError("no inputs given")
    return loaded[0] if len(loaded) == 1 else merge_corpora(loaded)


class Papers(NamedTuple):
    """What ``read_papers`` read: the papers, and the records it skipped."""

    papers: tuple[Paper, ...]
    skipped: tuple[Skip, ...]


class PaperStream:
    """The papers of ``inputs`` as they are read (iterate once), and the records skipped so
    far (``skipped``: complete once the stream has ended). ``kg build`` and ``kg add`` extract
    from it as it reads, so a dump is never held whole.

    Raw inputs are streamed (``kg.ingest.stream_papers``: filters, ``--limit`` and duplicate
    ids applied as they are read); an extraction JSONL or a `kg build` directory gives the
    papers it was extracted from (read first, as a whole: they are a project's, not a dump).
    When the stream ends, the ingest notices (and what the filters dropped) join ``notices``,
    then ``strict`` makes any skip a StrictModeError, and no paper at all is an InputError.

    >>> stream = PaperStream(["examples/iclr2025-seed.txt"])
    >>> sum(1 for _ in stream), stream.skipped
    (19, [])
    """

    def __init__(self, inputs: Iterable[str | Path], options: IngestOptions | None = None, *,
                 strict: bool = False, notices: list[str] | None = None) -> None:
        self.inputs, self.options, self.strict = list(inputs), options or IngestOptions(), strict
        self.notices = notices if notices is not None else []
        self.tally = Tally()
        self.skipped: list[Skip] = self.tally.skipped  # (one list: the stream's skips, in order)

    def __iter__(self) -> Iterator[Paper]:
        raw: list[str | Path] = []
        found: dict[str, Paper] = {}
        for item in self.inputs:
            path = Path(item)
            if str(item) != "-" and (path.is_dir() or is_extraction_file(path)):
                for result in load_corpus([path]).results:
                    p = result.paper
                    self._keep(found, replace(p, label=p.title or provisional_label(p.abstract)))
            else:
                raw.append(item)
        yield from found.values()
        kept = len(found)
        for paper in stream_papers(raw, self.options, self.tally) if raw else ():
            if paper.id in found:  # (the stream skips its own duplicates)
                self._duplicate(paper, found[paper.id])
                continue
            kept += 1
            yield paper
        self._end(kept)

    def _keep(self, found: dict[str, Paper], paper: Paper) -> None:
        if paper.id in found:
            self._duplicate(paper, found[paper.id])
        else:
            found[paper.id] = paper

    def _duplicate(self, paper: Paper, first: Paper) -> None:
        self.skipped.append(Skip(paper.source or paper.id, f"duplicate id {paper.id!r} (first "
                                 f"at {first.source or first.id}); give each record a "
                                 "unique id"))

    def _end(self, kept: int) -> None:
        summary = self.tally.summary()
        self.notices.extend([*self.tally.notices, *([summary] if summary else [])])
        if self.strict and self.skipped:
            details = "\n".join(f"  {s.source}: {s.reason}" for s in self.skipped[:20])
            raise StrictModeError(f"{len(self.skipped)} record(s) skipped (--strict):\n"
                                  f"{details}")
        if not kept:
            details = "\n".join(f"  {s.source}: {s.reason}" for s in self.skipped[:20])
            raise InputError("no papers to process" + (f":\n{details}" if details else
                                                        " (the inputs are empty)"))


def read_papers(inputs: Iterable[str | Path], options: IngestOptions | None = None, *,
                strict: bool = False, notices: list[str] | None = None) -> Papers:
    """The papers of ``inputs`` and the records skipped (``kg.read_papers``), all at once
    (``PaperStream`` gives them as they are read).

    Raw inputs are ingested; an extraction JSONL or a `kg build` directory gives the papers it
    was extracted from (they are extracted again, or found in the project's cache). Duplicate
    ids are skipped like any bad record; ``strict`` makes any skip a StrictModeError.

    >>> papers, skipped = read_papers(["examples/iclr2025-seed.txt"])
    >>> len(papers), skipped
    (19, ())
    """
    stream = PaperStream(inputs, options, strict=strict, notices=notices)
    papers = tuple(stream)
    return Papers(papers, tuple(stream.skipped))
