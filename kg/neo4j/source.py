"""What the Neo4j sinks read from a project beyond its public ``Project`` API.

This module is the one place in ``kg.neo4j`` that touches ``kg.project``'s private names
(its cache, its resolution from the cache, its line index) and the byte layout of an
extraction.jsonl line. Each function names the public ``Project`` method that replaces it;
once those exist, the callers call them and this module goes.

kg.project is imported inside the functions: its import (about 50 ms) would otherwise be
paid by every importer of kg.neo4j, `kg cypher` included, which never opens a project.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Set

from kg.model import Corpus
from kg.neo4j.rows import chunks

# The start of every line kg.io.write_jsonl writes: the paper's id is its first key.
_LINE_START = '{"paper": {"id": '


def cached_batches(project, size: int) -> Iterator[Corpus]:
    """``project``'s corpus resolved from its cache, ``size`` papers at a time in id order;
    each batch carries the entities its papers mention, and the entities no paper mentions
    come last, in a batch without papers.

    To be replaced by ``Project.batches(size)`` (with ``Project.results(ids)`` for each
    group's results).
    """
    from kg.project import META, _Cache, _Resolved

    with _Cache(project.root / META / "cache.sqlite", readonly=True) as cache:
        resolved = _Resolved(cache, project.manifest.papers, {})
        mentioned: set[str] = set()
        for group in chunks(resolved.order, size):
            results = resolved.results(group)
            ids = sorted({eid for r in results for eid in r.entity_ids})
            mentioned.update(ids)
            yield Corpus(tuple(results), {eid: resolved.entities[eid] for eid in ids})
        rest = sorted(set(resolved.entities) - mentioned)
        if rest:
            yield Corpus((), {eid: resolved.entities[eid] for eid in rest})


def paper_lines(project, wanted: Set[str]) -> list[str]:
    """The lines of the ``wanted`` papers in the generation's extraction.jsonl, in id order: at
    the offsets its line index gives, else (an index that does not fit the file) found by
    scanning the file. A paper the file lacks is left out (the caller says so).

    To be replaced by ``Project.lines(ids)``.
    """
    from kg.project import _line_spans

    decoder = json.JSONDecoder()
    lines = []
    spans = _line_spans(project.generation, project.manifest) if wanted else {}
    with (project.generation / "extraction.jsonl").open("rb") as fh:
        if spans:  # the file's line index: read those lines only
            for pid in sorted(wanted & spans.keys()):
                offset, length = spans[pid]
                fh.seek(offset)
                lines.append(fh.read(length).decode("utf-8"))
        elif wanted:
            for raw in fh:
                line = raw.decode("utf-8")
                # The id is the first key write_jsonl writes; decode just it, else the line.
                pid = (decoder.raw_decode(line, len(_LINE_START))[0]
                       if line.startswith(_LINE_START) else json.loads(line)["paper"]["id"])
                if pid in wanted:
                    lines.append(line)
    return lines
