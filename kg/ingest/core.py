"""Reading inputs: open once, sniff the format from the first record, stream Papers.

``stream_papers`` is the streaming API (an iterator of Papers with a running ``Tally`` of what
was skipped and filtered out); ``read_inputs`` collects it for callers that want everything.
"""

from __future__ import annotations

import codecs
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO

from kg.errors import InputError
from kg.ingest.bibliographic import bibtex_records, ris_records
from kg.ingest.jsonish import LIST_KEYS, document_prefix, document_records, json_lines
from kg.ingest.records import FORMATS, IngestOptions, paper_from_record
from kg.ingest.scholarly import MAPPERS, kind_of
from kg.ingest.streams import as_utf8, bounded_lines, decode, open_input, peek
from kg.ingest.tabular import delimited, looks_tabular, paragraphs
from kg.model import Paper, Skip

Records = Iterator[tuple[str, "dict | Skip"]]
_BY_SUFFIX = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv",
              ".txt": "text", ".md": "text", ".bib": "bibtex", ".ris": "ris"}
_BIBTEX = re.compile(r"\A(\s*(%[^\n]*)?\n)*\s*@\s*\w+\s*[{(]")
_RIS = re.compile(r"\A\s*TY  - ")
DEFAULTS = IngestOptions()


@dataclass(frozen=True)
class IngestResult:
    papers: tuple[Paper, ...]
    skipped: tuple[Skip, ...] = ()
    notices: tuple[str, ...] = field(default=())
    filtered: tuple[tuple[str, int], ...] = ()  # (the condition a record failed, how many)


@dataclass
class Tally:
    """What a stream has passed over so far: skipped records (bad input) and records filtered
    out (good input the filters did not want), kept apart."""

    skipped: list[Skip] = field(default_factory=list)
    filtered: Counter = field(default_factory=Counter)
    notices: list[str] = field(default_factory=list)
    kept: int = 0

    def summary(self) -> str | None:
        """One line on what the filters dropped, or None when they dropped nothing.

        >>> Tally(filtered=Counter({"venue~ICLR": 3, "no date (--since/--until)": 1})).summary()
        'filtered out 4 record(s): 3 venue~ICLR, 1 no date (--since/--until)'
        """
        if not self.filtered:
            return None
        parts = ", ".join(f"{n} {why}" for why, n in self.filtered.most_common())
        return f"filtered out {sum(self.filtered.values())} record(s): {parts}"


def detect_format(name: str, text: str, abstract_field: str = "abstract") -> str:
    """The format of ``text`` (the start of a file), from its content; the suffix only tells
    text, CSV and TSV apart when the content does not.

    >>> detect_format("<stdin>", "id\\ttitle\\tabstract\\nt1\\tOne\\tWe study X.\\n")
    'tsv'
    >>> detect_format("<stdin>", 'id,abstract\\nc1,"We use X, and Y."\\n')
    'csv'
    >>> detect_format("<stdin>", "We use X, and Y.\\n\\nWe study Z.\\n")
    'text'
    >>> detect_format("x.json", '{"id": "1", "abstract": "A."}\\n{"id": "2"}\\n')
    'jsonl'
    >>> detect_format("x.txt", "% refs\\n@article{k, title={T}}\\n")
    'bibtex'
    """
    head = text.lstrip("\ufeff \t\r\n")[:1]
    if head in ("{", "["):
        first = text.lstrip("\ufeff \t\r\n").split("\n", 1)[0]
        try:
            record = json.loads(first)
        except (json.JSONDecodeError, RecursionError):  # a bad first line of JSON Lines?
            return "jsonl" if _BY_SUFFIX.get(Path(name).suffix.lower()) == "jsonl" else "json"
        # One line holding a whole API response ({"results": [...]}) is a document.
        wrapper = isinstance(record, dict) and any(
            isinstance(record.get(key), list) for key in LIST_KEYS)
        return "jsonl" if isinstance(record, dict) and not wrapper else "json"
    if _BIBTEX.match(text):
        return "bibtex"
    if _RIS.match(text):
        return "ris"
    suffix = _BY_SUFFIX.get(Path(name).suffix.lower())
    if suffix in ("text", "csv", "tsv"):
        return suffix
    # Sniff the first lines, so a CSV or TSV piped on stdin is not read as one long paragraph.
    lines = [line for line in text.splitlines()[:50] if line.strip()]
    for fmt, delimiter in (("tsv", "\t"), ("csv", ",")):
        if looks_tabular(lines, delimiter, abstract_field):
            return fmt
    return "text"


def _decoded(name: str, stream: BinaryIO, opts: IngestOptions
             ) -> Iterator[tuple[int, str | Skip]]:
    for number, raw in bounded_lines(stream, name, opts.max_record_bytes):
        where = f"{name}:{number}"
        if raw is None:
            yield number, Skip(where, f"line is over {opts.max_record_bytes:,} bytes; skipped "
                               "(is the file in the format you think?)")
            continue
        try:
            yield number, decode(raw, opts.encoding, where)
        except InputError as exc:
            yield number, Skip(where, str(exc).removeprefix(f"{where}: "))


def _mapped(records: Records, kind: str | None, notices: list[str], name: str,
            opts: IngestOptions) -> Records:
    """Records of a JSON family, mapped by ``kind``'s mapper (auto: from the first record),
    keyed by ``opts``' field names, so mapped and generic records build alike."""
    mapper: Callable[[dict], dict] | None = MAPPERS.get(kind or "")
    decided = kind is not None
    for where, record in records:
        if isinstance(record, Skip):
            yield where, record
            continue
        if not decided:
            decided, kind = True, kind_of(record)
            mapper = MAPPERS.get(kind or "")
            if mapper is not None:
                notices.append(f"{name}: read as {kind} records (from the first record's keys)")
        if mapper is None:
            yield where, record
            continue
        try:
            mapped = mapper(record)
        except (AttributeError, TypeError, ValueError, IndexError, RecursionError) as exc:
            yield where, Skip(where, f"not a {kind} record of the expected shape ({exc}); "
                              "check --input-format, or fix or remove the record")
            continue
        for key, name_ in (("id", opts.id_field), ("title", opts.title_field),
                           ("abstract", opts.abstract_field)):
            mapped[name_] = mapped.pop(key)
        yield where, mapped


def _json_records(name: str, stream: BinaryIO, head: bytes, fmt: str,
                  opts: IngestOptions, dropped: Counter) -> Records:
    text = head.decode("utf-8", "replace")
    lines = fmt == "jsonl" or (fmt not in ("json", "csl") and detect_format(name, text) == "jsonl")
    if lines:
        return json_lines(name, bounded_lines(stream, name, opts.max_record_bytes),
                          opts.encoding, opts.max_record_bytes, opts.where, dropped)
    return document_records(name, stream, document_prefix(head), opts.max_record_bytes)


def _records(name: str, stream: BinaryIO, opts: IngestOptions, tally: Tally
             ) -> tuple[Records, IngestOptions]:
    """The records of one open input, and the options to build Papers from them with."""
    if peek(stream, 2) in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) and codecs.lookup(
            opts.encoding).name.startswith("utf-8"):  # Windows tools write UTF-16 with a BOM
        opts = replace(opts, encoding="utf-16")
    utf8 = as_utf8(stream, opts.encoding)
    if utf8 is not stream:
        stream, opts = utf8, replace(opts, encoding="utf-8")
    head = peek(stream)
    fmt = opts.format
    if fmt == "auto":
        fmt = detect_format(name, head.decode(opts.encoding, "replace"), opts.abstract_field)
    fixed = IngestOptions(max_chars=opts.max_chars)  # a known format names its own fields
    if fmt in ("jsonl", "json", *MAPPERS):
        records = _json_records(name, stream, head, fmt, opts, tally.filtered)
        if opts.format in ("jsonl", "json"):  # forced generic: the user's field names only
            return records, opts
        return (_mapped(records, fmt if fmt in MAPPERS else None, tally.notices, name, opts),
                opts)
    lines = _decoded(name, stream, opts)
    if fmt == "bibtex":
        return bibtex_records(name, lines), fixed
    if fmt == "ris":
        return ris_records(name, lines), fixed
    if fmt == "text":
        return paragraphs(name, lines), fixed
    # Column names match case-insensitively: the rows are keyed by the casefolded header.
    folded = replace(opts, id_field=opts.id_field.casefold(),
                     title_field=opts.title_field.casefold(),
                     abstract_field=opts.abstract_field.casefold())
    return delimited(name, lines, "\t" if fmt == "tsv" else ",", opts, tally.notices), folded


def _source_papers(source: str | Path, opts: IngestOptions, tally: Tally
                   ) -> Iterator[Paper | Skip]:
    """Papers and Skips of one input, filters applied (what they drop is counted in
    ``tally``); InputError when the input (or its rest) is unusable."""
    name, stream = open_input(source)
    with stream:
        records, build = _records(name, stream, opts, tally)
        for where, record in records:
            if isinstance(record, Skip):
                yield record
                continue
            try:
                paper = paper_from_record(record, where, build, tally.notices)
            except RecursionError:
                paper = Skip(where, "record nested too deep to be a paper; fix or remove it")
            why = opts.where.reject(paper) if opts.where and isinstance(paper, Paper) else None
            if why is None:
                yield paper
            else:
                tally.filtered[why] += 1


def stream_papers(sources: Iterable[str | Path], opts: IngestOptions = DEFAULTS,
                  tally: Tally | None = None) -> Iterator[Paper]:
    """Papers of every source as they are read; ``tally`` fills as the stream goes.

    Unusable files and bad records become skips; duplicate ids are skipped; papers
    ``opts.where`` rejects are counted in ``tally.filtered``; reading stops after
    ``opts.limit`` kept papers (the rest of the input is never read).

    >>> tally = Tally()
    >>> papers = stream_papers(["examples/iclr2025-seed.txt"], IngestOptions(limit=2), tally)
    >>> len(list(papers)), tally.kept
    (2, 2)
    """
    tally = tally if tally is not None else Tally()
    limit = opts.limit
    seen: dict[str, str] = {}
    for source in sources:
        if limit is not None and tally.kept >= limit:
            return
        read = 0
        try:
            for item in _source_papers(source, opts, tally):
                read += 1
                if isinstance(item, Skip):
                    tally.skipped.append(item)
                    continue
                if item.id in seen:
                    tally.skipped.append(Skip(item.source, f"duplicate id {item.id!r} (first at "
                                              f"{seen[item.id]}); give each record a unique id"))
                    continue
                seen[item.id] = item.source
                tally.kept += 1
                yield item
                if limit is not None and tally.kept >= limit:
                    return
        except InputError as exc:
            part = "rest of file" if read else "whole file"
            tally.skipped.append(Skip(str(source), f"{part} skipped: {exc}"))


def _collect(papers: Iterator[Paper], tally: Tally) -> IngestResult:
    kept = tuple(papers)
    summary = tally.summary()
    return IngestResult(kept, tuple(tally.skipped),
                        (*tally.notices, *([summary] if summary else [])),
                        tuple(tally.filtered.most_common()))


def read_source(source: str | Path, opts: IngestOptions = DEFAULTS) -> IngestResult:
    """Read one file (or ``-``); raises InputError when the file as a whole is unusable.

    Filters apply (``opts.where``); ``opts.limit`` and duplicate ids are ``read_inputs``'."""
    tally = Tally()
    papers: list[Paper] = []
    read = 0
    try:
        for item in _source_papers(source, opts, tally):
            read += 1
            (tally.skipped if isinstance(item, Skip) else papers).append(item)  # type: ignore
    except InputError as exc:
        if not read:
            raise
        tally.skipped.append(Skip(str(source), f"rest of file skipped: {exc}"))
    return _collect(iter(papers), tally)


def read_inputs(sources: Sequence[str | Path], opts: IngestOptions = DEFAULTS) -> IngestResult:
    """Read every source (see ``stream_papers``) into one IngestResult."""
    tally = Tally()
    return _collect(stream_papers(sources, opts, tally), tally)


__all__ = ["FORMATS", "IngestResult", "Tally", "detect_format", "read_inputs", "read_source",
           "stream_papers"]
