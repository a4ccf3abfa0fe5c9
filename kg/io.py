"""The extraction JSONL contract: one object per paper, in input order.

``{"paper": {...}, "entities": [{id, type, name, aliases, concept, mentions}], "relations":
[{subject, predicate, object, evidence: {text, start, end}, rule, confidence}]}``

>>> import io as _io
>>> from kg.pipeline import run
>>> buf = _io.StringIO()
>>> write_jsonl(run(["examples/iclr2025-seed.txt"]), buf)
>>> buf.getvalue().count("\\n")
19
"""

from __future__ import annotations

import json
import mmap
import re
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

from kg.errors import InputError
from kg.model import ENTITY_TYPES, PREDICATES, Corpus, Entity, Paper, PaperResult, Relation, Span

# Characters no IRI may hold (RFC 3987); a concept with one would break graph.nt.
_IRI_BAD = re.compile(r'[\x00-\x20<>"{}|^`\\]')


def _span(s: Span) -> dict:
    return {"text": s.text, "start": s.start, "end": s.end}


def result_to_dict(result: PaperResult, entities: dict[str, Entity]) -> dict:
    out_entities = []
    for eid, spans in result.mentions:
        e = entities[eid]
        out_entities.append({
            "id": e.id, "type": e.type, "name": e.name, "aliases": list(e.aliases),
            "concept": e.concept, "mentions": [_span(s) for s in spans],
        })
    relations = [{
        "subject": r.subject, "predicate": r.predicate, "object": r.object,
        "evidence": _span(r.evidence), "rule": r.rule, "confidence": r.confidence,
    } for r in result.relations]
    return {"paper": result.paper.metadata(), "entities": out_entities, "relations": relations}


def write_jsonl(corpus: Corpus, fh: TextIO) -> None:
    """Write the contract, deterministically (stable key order, no timestamps)."""
    for result in corpus.results:
        fh.write(json.dumps(result_to_dict(result, corpus.entities), ensure_ascii=False) + "\n")


# ------------------------------------------------------------------ one line of the file
# A project splices extraction.jsonl from lines (kg.project.generation): what a line looks
# like is said here only.

_LINE_START = '{"paper": {"id": '
_ENTITIES = b', "entities": ['
_RELATIONS = b'], "relations": ['


def result_line(result: PaperResult, entities: dict[str, Entity]) -> bytes:
    """The line ``write_jsonl`` writes for ``result``, encoded."""
    return (json.dumps(result_to_dict(result, entities), ensure_ascii=False) + "\n"
            ).encode("utf-8")


def line_paper_id(line: str) -> str:
    """The paper id of a line ``write_jsonl`` wrote (the id is its first key: decoded alone).

    >>> line_paper_id('{"paper": {"id": "p1", "title": "T"}, "entities": []}')
    'p1'
    """
    if line.startswith(_LINE_START):
        return json.JSONDecoder().raw_decode(line, len(_LINE_START))[0]
    return json.loads(line)["paper"]["id"]


def renamed_line(line: bytes, entities: dict[str, Entity]) -> bytes:
    """A line with its entities' names, aliases, types and concepts as ``entities`` has them
    now.

    Only the "entities" array is parsed and rewritten: ``, "entities": [`` and
    ``], "relations": [`` can only occur between the record's fields (inside a JSON string
    every quote is escaped), and the abstract and relations are most of the line.

    >>> line = (b'{"paper": {"id": "p"}, "entities": [{"id": "m/x", "type": "Method", '
    ...         b'"name": "X", "aliases": [], "concept": null, "mentions": []}], '
    ...         b'"relations": []}')
    >>> renamed_line(line, {"m/x": Entity("m/x", "Method", "X", ("XX",))}) == line.replace(
    ...     b'"aliases": []', b'"aliases": ["XX"]')
    True
    """
    start = line.index(_ENTITIES) + len(_ENTITIES) - 1
    end = line.index(_RELATIONS, start) + 1
    found = json.loads(line[start:end])
    for entry in found:
        e = entities[entry["id"]]
        entry.update(type=e.type, name=e.name, aliases=list(e.aliases), concept=e.concept)
    return line[:start] + json.dumps(found, ensure_ascii=False).encode("utf-8") + line[end:]


def line_ends(path: Path) -> list[int]:
    """The end offset of each line of ``path`` ([] when it is missing or empty)."""
    found: list[int] = []
    try:
        with Path(path).open("rb") as fh, \
                mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            at = data.find(b"\n")
            while at >= 0:
                found.append(at + 1)
                at = data.find(b"\n", at + 1)
    except (OSError, ValueError):  # missing or empty
        return []
    return found


def write_offsets(path: Path, offsets: Sequence[int]) -> None:
    """Write line offsets as 8-byte unsigned integers (``read_offsets`` reads them back)."""
    Path(path).write_bytes(array("Q", offsets).tobytes())


def read_offsets(path: Path) -> list[int]:
    """The offsets ``write_offsets`` wrote (OSError or ValueError when unreadable)."""
    ends = array("Q")
    ends.frombytes(Path(path).read_bytes())
    return ends.tolist()


def _paper(data: dict) -> Paper:
    return Paper(
        id=data["id"], abstract=data.get("abstract", ""), title=data.get("title"),
        label=data.get("label") or "", authors=tuple(data.get("authors", ())),
        keywords=tuple(data.get("keywords", ())), venue=data.get("venue"),
        year=data.get("year"), url=data.get("url"), date=data.get("date"),
        categories=tuple(data.get("categories", ())), links=tuple(data.get("links", ())),
    )


def read_jsonl(path: Path) -> Corpus:
    """Read a file written by ``write_jsonl`` back into a Corpus."""
    results: list[PaperResult] = []
    entities: dict[str, Entity] = {}
    with Path(path).open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                paper = _paper(data["paper"])
                mentions = []
                for e in data["entities"]:
                    entities.setdefault(e["id"], Entity(e["id"], e["type"], e["name"],
                                                        tuple(e["aliases"]), e["concept"]))
                    mentions.append((e["id"], tuple(Span(m["text"], m["start"], m["end"])
                                                    for m in e["mentions"])))
                relations = tuple(
                    Relation(r["subject"], r["predicate"], r["object"],
                             Span(r["evidence"]["text"], r["evidence"]["start"],
                                  r["evidence"]["end"]), r["rule"], r["confidence"])
                    for r in data["relations"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise InputError(f"{path}:{number}: not a kg extraction record ({exc}); "
                                 "regenerate it with `kg extract --format jsonl`") from exc
            problem = _inconsistency(paper, mentions, relations, entities)
            if problem:
                raise InputError(f"{path}:{number}: {problem}; regenerate the file with "
                                 "`kg extract --format jsonl` (or `kg build`)")
            results.append(PaperResult(paper, tuple(mentions), relations))
    return Corpus(tuple(results), dict(sorted(entities.items())))


def _inconsistency(paper: Paper, mentions: list, relations: tuple[Relation, ...],
                   entities: dict[str, Entity]) -> str | None:
    """Why a record read back cannot be written to RDF or Neo4j, or None.

    Checked on reading, so every sink refuses the same file the same way (exit 2), and nothing
    unchecked reaches an IRI or a relationship type.
    """
    for eid, _ in mentions:
        entity = entities[eid]
        if entity.type not in ENTITY_TYPES:
            return (f"entity {eid!r} has unknown type {entity.type!r} (expected one of "
                    f"{', '.join(ENTITY_TYPES)})")
        if entity.concept is not None and (
                not isinstance(entity.concept, str) or _IRI_BAD.search(entity.concept)):
            return f"entity {eid!r} has a concept that is not an IRI: {entity.concept!r}"
    for r in relations:
        if r.predicate not in PREDICATES:
            return (f"unknown predicate {r.predicate!r} (expected one of "
                    f"{', '.join(PREDICATES)})")
        if r.subject != paper.id and r.subject not in entities:
            return f"relation subject {r.subject!r} is neither the paper nor a listed entity"
        if r.object not in entities:
            return f"relation object {r.object!r} is not a listed entity"
    return None


def merge_corpora(corpora: Iterable[Corpus]) -> Corpus:
    """Concatenate corpora (ids are stable, so shared entities coincide); later duplicates drop."""
    results: list[PaperResult] = []
    entities: dict[str, Entity] = {}
    seen: set[str] = set()
    skipped = []
    for corpus in corpora:
        skipped.extend(corpus.skipped)
        for result in corpus.results:
            if result.paper.id not in seen:
                seen.add(result.paper.id)
                results.append(result)
        for eid, e in corpus.entities.items():
            if eid in entities:
                old = entities[eid]
                aliases = tuple(sorted(set(old.aliases) | set(e.aliases),
                                       key=lambda s: (s.casefold(), s)))
                entities[eid] = Entity(eid, e.type, old.name, aliases, old.concept or e.concept)
            else:
                entities[eid] = e
    return Corpus(tuple(results), dict(sorted(entities.items())), tuple(skipped))
