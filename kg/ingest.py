"""Read papers from files: plain text, JSON Lines, JSON arrays, CSV/TSV, or stdin.

Every paper gets a stable id (the given ``id``, else ``p-`` + a content hash of the normalised
abstract). Bad records are skipped and reported as ``Skip`` s — one bad record never stops a run.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "papers.jsonl"
>>> _ = path.write_text('{"id": "a", "abstract": "We propose X."}\\n{"id": "a"}\\n')
>>> result = read_inputs([path])
>>> [p.id for p in result.papers], len(result.skipped)
(['a'], 1)
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from kg.errors import InputError
from kg.model import Paper, Skip
from kg.text import shorten

FORMATS = ("auto", "text", "jsonl", "json", "csv", "tsv")

# Column layouts of the headerless OpenReview scraper TSVs (github.com/dotd/NeurIPS2024Scrape).
OPENREVIEW_LAYOUTS: dict[int, tuple[str, ...]] = {
    9: ("title", "authors", "keywords", "primary_area", "venue", "pdf", "supplementary_material",
        "tldr", "abstract"),
    11: ("id", "title", "authors", "keywords", "primary_area", "venue", "pdf",
         "supplementary_material", "tldr", "spotlight", "abstract"),
}


@dataclass(frozen=True)
class IngestOptions:
    """How to read inputs; column names apply to CSV/TSV and to JSON keys."""

    format: str = "auto"
    id_field: str = "id"
    title_field: str = "title"
    abstract_field: str = "abstract"
    encoding: str = "utf-8-sig"
    # Extraction time grows faster than linearly with length (0.7 s at 100k characters, 3.3 s
    # at 200k), and no real abstract comes near 100k: a record
    # that long is a whole paper or a broken quote that swallowed many rows. Such a record is
    # skipped, not truncated: half a text would give a graph that silently misses its ending.
    max_chars: int = 100_000

    def __post_init__(self) -> None:
        # Checked here, before any file is read, so a typo is one message, not a skip per file.
        if self.format not in FORMATS:
            raise InputError(f"unknown input format {self.format!r}; use one of "
                             f"{', '.join(FORMATS)}")
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise InputError(f"unknown encoding {self.encoding!r}; use a Python codec name such "
                             "as utf-8, utf-8-sig, latin-1 or cp1252") from None


@dataclass(frozen=True)
class IngestResult:
    papers: tuple[Paper, ...]
    skipped: tuple[Skip, ...] = ()
    notices: tuple[str, ...] = field(default=())


def normalise_abstract(text: str) -> str:
    """Collapse whitespace so the content hash ignores layout."""
    return " ".join(text.split())


def content_id(abstract: str) -> str:
    """A stable id from the abstract's content.

    >>> content_id("We  propose X.") == content_id("We propose X.")
    True
    """
    digest = hashlib.sha256(normalise_abstract(abstract).encode("utf-8")).hexdigest()
    return "p-" + digest[:12]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def provisional_label(abstract: str, limit: int = 80) -> str:
    """A readable label for an untitled paper: its first sentence, shortened.

    >>> provisional_label("We study caching. It helps.")
    'We study caching.'
    """
    return shorten(_SENTENCE_END.split(normalise_abstract(abstract), maxsplit=1)[0], limit)


def _split_list(value: object) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, list | tuple):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return tuple(v.strip() for v in re.split(r"[;|]", str(value)) if v.strip())


def _year(value: object, where: str, notices: list[str]) -> int | None:
    if value in (None, ""):
        return None
    match = re.search(r"\b(19|20)\d{2}\b", str(value))
    if match:
        return int(match.group(0))
    notices.append(f"{where}: year {value!r} is not a year; left empty")
    return None


def _scalar_text(value: object) -> str | None:
    """A JSON scalar as text: numbers as JSON writes them (``12``, ``1.5``), not Python repr.

    >>> [_scalar_text(v) for v in (12, 12.0, 2.5, " a ", "", None)]
    ['12', '12', '2.5', 'a', None, None]
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = "" if value is None else str(value).strip()
    return text or None


def _paper_from_record(
    record: dict, where: str, opts: IngestOptions, notices: list[str]
) -> Paper | Skip:
    abstract = record.get(opts.abstract_field)
    if not isinstance(abstract, str) or not abstract.strip():
        return Skip(where, f"record has no {opts.abstract_field!r} text; add one or remove the "
                    "record (use --abstract-field if the column has another name)")
    abstract = abstract.strip()
    for key in (opts.id_field, opts.title_field, "venue", "year", "url"):
        if isinstance(record.get(key), dict | list | bool):
            kind = type(record[key]).__name__.replace("dict", "object").replace("bool", "boolean")
            return Skip(where, f"{key!r} is a JSON {kind}; give a string or a number")
    title = _scalar_text(record.get(opts.title_field))
    title = " ".join(title.split()) if title else None
    size = len(abstract) + len(title or "")
    if size > opts.max_chars:
        return Skip(where, f"record has {size:,} characters of title and abstract, over the "
                    f"{opts.max_chars:,} limit; split it into its papers (a broken quote can "
                    "join many rows), or pass --max-chars if it really is one abstract")
    given = _scalar_text(record.get(opts.id_field))
    paper_id = given or content_id(abstract)
    venue = _scalar_text(record.get("venue"))
    year = _year(record.get("year"), where, notices)
    if year is None and venue:
        match = re.search(r"\b(19|20)\d{2}\b", venue)
        year = int(match.group(0)) if match else None
    url = _scalar_text(record.get("url")) or (given if (given or "").startswith("http") else None)
    return Paper(
        id=paper_id,
        abstract=abstract,
        title=title,
        label=title or provisional_label(abstract),
        authors=_split_list(record.get("authors")),
        keywords=_split_list(record.get("keywords")),
        venue=venue,
        year=year,
        url=url,
        source=where,
    )


def _records_text(name: str, text: str) -> Iterator[tuple[str, dict]]:
    """Paragraphs separated by blank lines; a short first line without a full stop is a header."""
    lines = text.splitlines()
    paragraph: list[str] = []
    start = 0
    first = True
    for number, line in enumerate([*lines, ""], start=1):
        if line.strip():
            if not paragraph:
                start = number
            paragraph.append(line.strip())
            continue
        if paragraph:
            body = " ".join(paragraph)
            is_header = first and len(paragraph) == 1 and len(body) < 100 and not body.endswith(".")
            first = False
            if not is_header:
                yield f"{name}:{start}", {"abstract": body}
            paragraph = []


def _records_jsonl(name: str, text: str) -> Iterator[tuple[str, dict | Skip]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield where, Skip(where, f"malformed JSON ({exc.msg} at column {exc.colno}); "
                              "fix the line or remove it")
            continue
        if not isinstance(record, dict):
            yield where, Skip(where, "expected a JSON object per line")
            continue
        yield where, record


def _records_json(name: str, text: str) -> Iterator[tuple[str, dict | Skip]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}:{exc.lineno}: malformed JSON ({exc.msg}); fix the file "
                         "(one JSON array of objects, or JSON Lines with --format jsonl)") from exc
    if isinstance(data, dict):
        data = data.get("papers", data.get("records"))
    if not isinstance(data, list):
        raise InputError(f"{name}: expected a JSON array of paper objects (or {{'papers': [...]}})")
    for index, record in enumerate(data):
        where = f"{name}:record {index + 1}"
        if isinstance(record, dict):
            yield where, record
        else:
            yield where, Skip(where, "expected a JSON object")


def _physical_rows(lines: list[str], begin: int, delimiter: str
                   ) -> Iterator[tuple[int, int, list[str]]]:
    """CSV rows from ``lines[begin:]`` with the physical lines each spans: (first, end, row)."""
    reader = csv.reader(iter(lines[begin:]), delimiter=delimiter,
                        quoting=csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL)
    end = begin
    for row in reader:
        first, end = end, begin + reader.line_num
        yield first, end, row


def _well_quoted(raw: str) -> bool:
    """True when ``raw`` parses as CSV under strict quoting (every quoted field closed, and
    followed by a delimiter or the end of the line)."""
    try:
        list(csv.reader(io.StringIO(raw, newline=""), strict=True))
    except csv.Error:
        return False
    return True


def _records_delimited(
    name: str, text: str, delimiter: str, opts: IngestOptions, notices: list[str]
) -> Iterator[tuple[str, dict | Skip]]:
    csv.field_size_limit(sys.maxsize)
    lines = io.StringIO(text, newline="").readlines()  # split as the csv module splits
    first_row = next(_physical_rows(lines, 0, delimiter), None)
    if first_row is None:
        return
    _, pos, header = first_row
    header = [h.strip() for h in header]
    lowered = [h.casefold() for h in header]
    if opts.abstract_field.casefold() not in lowered:
        layout = OPENREVIEW_LAYOUTS.get(len(header))
        if delimiter == "\t" and layout and opts.abstract_field == "abstract":
            notices.append(f"{name}: no header row; read as the OpenReview scraper layout "
                           f"({len(header)} columns)")
            lowered, pos = list(layout), 0
        else:
            raise InputError(
                f"{name}:1: no {opts.abstract_field!r} column (columns: {', '.join(header)}); "
                "pass --abstract-field NAME"
            )
    while pos < len(lines):
        for first, end, row in _physical_rows(lines, pos, delimiter):
            pos = end
            where = f"{name}:{first + 1}"
            if not any(cell.strip() for cell in row):
                continue
            # An unbalanced quote swallows the lines after it into one field. Skip only the
            # line that opened it and read the swallowed lines again as records of their own.
            if delimiter != "\t" and end - first > 1 and (
                    len(row) != len(lowered) or not _well_quoted("".join(lines[first:end]))):
                yield where, Skip(where, f"unbalanced quote: the field opened here runs on to "
                                  f"line {end}; close it or double it (\"\"); the lines after "
                                  "it are read as records of their own")
                pos = first + 1
                break
            if len(row) != len(lowered):
                yield where, Skip(where, f"has {len(row)} fields, the header has "
                                  f"{len(lowered)}; check quoting/delimiters on this line")
                continue
            yield where, dict(zip(lowered, row, strict=True))


def _looks_tabular(lines: list[str], delimiter: str, abstract_field: str) -> bool:
    """A header naming the abstract column, or (TSV only) rows of equal width, ≥ 2 cells filled.

    Plain prose has commas everywhere, so CSV needs the header; it rarely has tabs, and an
    indented paragraph leaves its first cell empty.
    """
    if not lines:
        return False
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    header = next(csv.reader(lines[:1], delimiter=delimiter, quoting=quoting))
    if len(header) < 2:
        return False
    names = [cell.strip() for cell in header]
    looks_like_names = all(len(n) <= 40 and not n.endswith(".") for n in names)
    if looks_like_names and abstract_field.casefold() in (n.casefold() for n in names):
        return True
    if delimiter != "\t":
        return False
    widths = {line.count("\t") + 1 for line in lines}
    filled = sum(1 for cell in header if cell.strip())
    return filled >= 2 and widths == {len(header)} and (
        len(lines) >= 2 or len(header) in OPENREVIEW_LAYOUTS)


def detect_format(name: str, text: str, abstract_field: str = "abstract") -> str:
    """Pick a format from the file extension, else from the content.

    >>> detect_format("<stdin>", "id\\ttitle\\tabstract\\nt1\\tOne\\tWe study X.\\n")
    'tsv'
    >>> detect_format("<stdin>", 'id,abstract\\nc1,"We use X, and Y."\\n')
    'csv'
    >>> detect_format("<stdin>", "We use X, and Y.\\n\\nWe study Z.\\n")
    'text'
    >>> detect_format("<stdin>", "Abstract, in short: we study X.\\n")
    'text'
    """
    suffix = Path(name).suffix.lower()
    by_suffix = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv",
                 ".tsv": "tsv", ".txt": "text", ".md": "text"}
    if suffix in by_suffix:
        return by_suffix[suffix]
    head = text.lstrip()[:1]
    if head == "[":
        return "json"
    if head == "{":
        return "jsonl"
    # Sniff the first lines, so a CSV or TSV piped on stdin is not read as one long paragraph.
    lines = [line for line in text.splitlines()[:50] if line.strip()]
    for fmt, delimiter in (("tsv", "\t"), ("csv", ",")):
        if _looks_tabular(lines, delimiter, abstract_field):
            return fmt
    return "text"


def _read_text(source: str | Path, opts: IngestOptions) -> tuple[str, str]:
    if str(source) == "-":
        data = sys.stdin.buffer.read()
        name = "<stdin>"
    else:
        path = Path(source)
        name = str(path)
        if path.is_dir():
            raise InputError(f"{name}: is a directory; pass the files inside it")
        try:
            data = path.read_bytes()
        except FileNotFoundError as exc:
            raise InputError(f"{name}: no such file") from exc
        except OSError as exc:
            raise InputError(f"{name}: cannot read ({exc.strerror}); check permissions") from exc
    try:
        return name, data.decode(opts.encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{name}:{line}: not valid {opts.encoding} (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); convert it (e.g. `iconv -f latin1 -t utf-8`) or pass --encoding"
        ) from exc


def read_source(source: str | Path, opts: IngestOptions = IngestOptions()) -> IngestResult:
    """Read one file (or ``-``); raises InputError when the file as a whole is unusable."""
    name, text = _read_text(source, opts)
    fmt = opts.format if opts.format != "auto" else detect_format(name, text, opts.abstract_field)
    notices: list[str] = []
    records: Iterable[tuple[str, dict | Skip]]
    if fmt == "text":
        records = _records_text(name, text)
        text_opts = IngestOptions(abstract_field="abstract", max_chars=opts.max_chars)
    elif fmt == "jsonl":
        records, text_opts = _records_jsonl(name, text), opts
    elif fmt == "json":
        records, text_opts = _records_json(name, text), opts
    elif fmt in ("csv", "tsv"):
        delimiter = "\t" if fmt == "tsv" else ","
        # Column names match case-insensitively: the rows are keyed by the casefolded header.
        text_opts = replace(opts, id_field=opts.id_field.casefold(),
                            title_field=opts.title_field.casefold(),
                            abstract_field=opts.abstract_field.casefold())
        records = _records_delimited(name, text, delimiter, opts, notices)
    else:
        raise InputError(f"unknown input format {fmt!r}; use one of {', '.join(FORMATS)}")
    papers: list[Paper] = []
    skipped: list[Skip] = []
    for where, record in records:
        item = record if isinstance(record, Skip) else _paper_from_record(
            record, where, text_opts, notices)
        (skipped if isinstance(item, Skip) else papers).append(item)  # type: ignore[arg-type]
    return IngestResult(tuple(papers), tuple(skipped), tuple(notices))


def read_inputs(
    sources: Sequence[str | Path], opts: IngestOptions = IngestOptions()
) -> IngestResult:
    """Read every source; unusable files and records become skips; duplicate ids are skipped."""
    papers: list[Paper] = []
    skipped: list[Skip] = []
    notices: list[str] = []
    seen: dict[str, str] = {}
    for source in sources:
        try:
            result = read_source(source, opts)
        except InputError as exc:
            skipped.append(Skip(str(source), f"whole file skipped: {exc}"))
            continue
        skipped.extend(result.skipped)
        notices.extend(result.notices)
        for paper in result.papers:
            if paper.id in seen:
                skipped.append(Skip(paper.source, f"duplicate id {paper.id!r} (first at "
                                    f"{seen[paper.id]}); give each record a unique id"))
                continue
            seen[paper.id] = paper.source
            papers.append(paper)
    return IngestResult(tuple(papers), tuple(skipped), tuple(notices))
