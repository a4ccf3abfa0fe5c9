"""Records → ``Paper``: the one place a record's fields become a Paper, for every format.

A reader yields ``(where, record)`` pairs; ``record`` is a plain dict keyed by the generic
field names (``id``, ``title``, ``abstract``, ``authors``, …, ``date``, ``categories``,
``links``) or by the user's column names, or a ``Skip`` when the record could not be read.

>>> opts = IngestOptions()
>>> paper_from_record({"id": "a", "abstract": " We study X. "}, "f:1", opts, []).abstract
'We study X.'
>>> paper_from_record({"id": "a"}, "f:1", opts, []).reason[:30]
"record has no 'abstract' text;"
"""

from __future__ import annotations

import codecs
import hashlib
import re
from dataclasses import dataclass, field

from kg.errors import InputError
from kg.ingest.filters import PaperFilter
from kg.model import Paper, Skip
from kg.text import shorten

GENERIC_FORMATS = ("text", "jsonl", "json", "csv", "tsv")
SCHOLARLY_FORMATS = ("arxiv", "openalex", "s2", "openreview", "bibtex", "csl", "ris")
FORMATS = ("auto", *GENERIC_FORMATS, *SCHOLARLY_FORMATS)

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
    # The most bytes one record (a line, an entry) may take before it is parsed, so memory
    # stays bounded whatever the input (`/dev/zero` has no line end). An OpenAlex work with
    # thousands of authors runs to a few MB; 32 MiB leaves room for that and nothing more.
    max_record_bytes: int = 32 * 2**20
    # Applied while reading (kg.ingest.stream_papers): papers ``where`` rejects are counted
    # as filtered out, not skipped; reading stops after ``limit`` kept papers.
    where: PaperFilter = field(default_factory=PaperFilter)
    limit: int | None = None

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
_YEAR = re.compile(r"\b(19|20)\d{2}\b")


def provisional_label(abstract: str, limit: int = 80) -> str:
    """A readable label for an untitled paper: its first sentence, shortened.

    >>> provisional_label("We study caching. It helps.")
    'We study caching.'
    """
    return shorten(_SENTENCE_END.split(normalise_abstract(abstract), maxsplit=1)[0], limit)


def split_list(value: object) -> tuple[str, ...]:
    """A list field as a tuple: a JSON list, or text separated by ``;`` or ``|``.

    >>> split_list("A; B|C"), split_list(["x", " ", 2])
    (('A', 'B', 'C'), ('x', '2'))
    """
    if value is None or value == "":
        return ()
    if isinstance(value, list | tuple):
        return tuple(text for text in (str(v).strip() for v in value) if text)
    return tuple(v.strip() for v in re.split(r"[;|]", str(value)) if v.strip())


def _year(value: object, where: str, notices: list[str]) -> int | None:
    if value in (None, ""):
        return None
    match = _YEAR.search(str(value))
    if match:
        return int(match.group(0))
    notices.append(f"{where}: year {value!r} is not a year; left empty")
    return None


def scalar_text(value: object) -> str | None:
    """A JSON scalar as text: numbers as JSON writes them (``12``, ``1.5``), not Python repr.

    >>> [scalar_text(v) for v in (12, 12.0, 2.5, " a ", "", None)]
    ['12', '12', '2.5', 'a', None, None]
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = "" if value is None else str(value).strip()
    return text or None


_DATE = re.compile(r"^((?:19|20)\d{2})(?:[-/](\d{1,2})(?:[-/](\d{1,2}))?)?")


def iso_date(value: str | None) -> str | None:
    """A date as ISO ``YYYY-MM-DD`` / ``YYYY-MM`` / ``YYYY`` (RIS writes ``2023/05/23/``).

    >>> iso_date("2023/5/23/"), iso_date("2024-05"), iso_date("May 2024"), iso_date(None)
    ('2023-05-23', '2024-05', None, None)
    """
    match = _DATE.match(value or "")
    if not match:
        return None
    return "-".join(f"{int(part):02d}" for part in match.groups() if part)


def _check_scalars(record: dict, opts: IngestOptions) -> str | None:
    for key in (opts.id_field, opts.title_field, "venue", "year", "url", "date"):
        if isinstance(record.get(key), dict | list | bool):
            kind = type(record[key]).__name__.replace("dict", "object").replace("bool", "boolean")
            return f"{key!r} is a JSON {kind}; give a string or a number"
    return None


def paper_from_record(record: dict, where: str, opts: IngestOptions,
                      notices: list[str]) -> Paper | Skip:
    """The Paper of one record, or a Skip saying what is wrong and how to fix it."""
    abstract = record.get(opts.abstract_field)
    if not isinstance(abstract, str) or not abstract.strip():
        return Skip(where, f"record has no {opts.abstract_field!r} text; add one or remove the "
                    "record (use --abstract-field if the column has another name)")
    abstract = abstract.strip()
    problem = _check_scalars(record, opts)
    if problem:
        return Skip(where, problem)
    title = scalar_text(record.get(opts.title_field))
    title = " ".join(title.split()) if title else None
    size = len(abstract) + len(title or "")
    if size > opts.max_chars:
        return Skip(where, f"record has {size:,} characters of title and abstract, over the "
                    f"{opts.max_chars:,} limit; split it into its papers (a broken quote can "
                    "join many rows), or pass --max-chars if it really is one abstract")
    given = scalar_text(record.get(opts.id_field))
    venue = scalar_text(record.get("venue"))
    year = _year(record.get("year"), where, notices)
    date = iso_date(scalar_text(record.get("date")))
    if year is None and (date or venue):
        match = _YEAR.search(date or venue or "")
        year = int(match.group(0)) if match else None
    url = scalar_text(record.get("url")) or (given if (given or "").startswith("http") else None)
    return Paper(
        id=given or content_id(abstract), abstract=abstract, title=title,
        label=title or provisional_label(abstract),
        authors=split_list(record.get("authors")), keywords=split_list(record.get("keywords")),
        venue=venue, year=year, url=url, source=where, date=date,
        categories=split_list(record.get("categories")),
        links=tuple(link for link in split_list(record.get("links")) if link != url),
    )
