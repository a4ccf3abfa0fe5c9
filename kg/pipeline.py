"""The whole run: ingest → extract → resolve, with optional worker processes.

>>> corpus = run(["examples/iclr2025-seed.txt"])
>>> len(corpus), corpus.skipped
(19, ())
"""

from __future__ import annotations

import json
import multiprocessing as mp
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from kg.errors import InputError, StrictModeError
from kg.exports import check_export_file
from kg.ingest import IngestOptions, provisional_label, read_inputs
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


def _chunks(items: Sequence[Paper], size: int) -> Iterator[list[Paper]]:
    for i in range(0, len(items), size):
        yield list(items[i:i + size])


def extract_all(
    papers: Sequence[Paper],
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


def _extract_each(papers: Sequence[Paper], workers: int,
                  on_progress: Callable[[int], None] | None, trained_model: str | None,
                  skipped: list[Skip] | None) -> list[Extraction]:
    out: list[Extraction] = []
    for paper, item in zip(papers, extract_each(papers, workers, on_progress, trained_model),
                           strict=True):
        if isinstance(item, Extraction):
            out.append(item)
        elif skipped is None:
            raise InputError(f"{paper.source or paper.id}: {item}")
        else:
            skipped.append(Skip(paper.source or paper.id, item))
    return out


def extract_each(papers: Sequence[Paper], workers: int = 1,
                 on_progress: Callable[[int], None] | None = None,
                 trained_model: str | None = None) -> Iterator[Extraction | str]:
    """Each paper's Extraction (before the corpus-level step), in input order, or a message
    saying why the extractor failed on that paper; ``workers > 1`` uses that many processes."""
    chunk = 50
    if workers <= 1 or len(papers) < 2 * chunk:
        ex = extractor(trained_model)
        for part in _chunks(papers, chunk):
            yield from extract_safely(ex, part)
            if on_progress:
                on_progress(len(part))
        return

    done = 0
    ctx = mp.get_context("fork" if sys.platform != "win32" else "spawn")
    with ctx.Pool(workers, initializer=_init_worker, initargs=(trained_model,)) as pool:
        for part in pool.imap(_extract_chunk, _chunks(papers, chunk)):
            for found in part:
                paper = papers[done]
                done += 1
                yield found if isinstance(found, str) else expand(paper, found)
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


def read_papers(inputs: Iterable[str | Path], options: IngestOptions | None = None, *,
                strict: bool = False, notices: list[str] | None = None) -> Papers:
    """The papers of ``inputs`` and the records skipped (``kg.read_papers``).

    Raw inputs are ingested; an extraction JSONL or a `kg build` directory gives the papers it
    was extracted from (they are extracted again, or found in the project's cache). Duplicate
    ids are skipped like any bad record; ``strict`` makes any skip a StrictModeError.

    >>> papers, skipped = read_papers(["examples/iclr2025-seed.txt"])
    >>> len(papers), skipped
    (19, ())
    """
    raw: list[str | Path] = []
    found: list[Paper] = []
    for item in inputs:
        path = Path(item)
        if str(item) != "-" and (path.is_dir() or is_extraction_file(path)):
            found.extend(replace(p, label=p.title or provisional_label(p.abstract))
                         for p in (r.paper for r in load_corpus([path]).results))
        else:
            raw.append(item)
    ingested = read_inputs(raw, options or IngestOptions()) if raw else None
    if ingested is not None and notices is not None:
        notices.extend(ingested.notices)
    papers: list[Paper] = []
    skipped: list[Skip] = list(ingested.skipped) if ingested else []
    seen: dict[str, str] = {}
    for paper in [*found, *(ingested.papers if ingested else ())]:
        if paper.id in seen:
            skipped.append(Skip(paper.source or paper.id, f"duplicate id {paper.id!r} (first "
                                f"at {seen[paper.id]}); give each record a unique id"))
            continue
        seen[paper.id] = paper.source or paper.id
        papers.append(paper)
    if strict and skipped:
        details = "\n".join(f"  {s.source}: {s.reason}" for s in skipped[:20])
        raise StrictModeError(f"{len(skipped)} record(s) skipped (--strict):\n{details}")
    if not papers:
        details = "\n".join(f"  {s.source}: {s.reason}" for s in skipped[:20])
        raise InputError("no papers to process" + (f":\n{details}" if details else
                                                    " (the inputs are empty)"))
    return Papers(tuple(papers), tuple(skipped))
