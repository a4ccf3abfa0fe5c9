"""Plain text (paragraphs), CSV and TSV, read line by line.

>>> list(paragraphs("f", iter([(1, "Title"), (2, ""), (3, "We study X."), (4, "More.")])))
[('f:3', {'abstract': 'We study X. More.'})]
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator

from kg.errors import InputError
from kg.ingest.records import OPENREVIEW_LAYOUTS, IngestOptions
from kg.model import Skip

Lines = Iterator[tuple[int, "str | Skip"]]


def paragraphs(name: str, lines: Lines) -> Iterator[tuple[str, dict | Skip]]:
    """Paragraphs separated by blank lines; a short first line without a full stop is a header."""
    paragraph: list[str] = []
    bad: Skip | None = None
    start = 0
    first = True
    for number, line in _ended(lines):
        if isinstance(line, Skip) or line.strip():
            if not paragraph and bad is None:
                start = number
            if isinstance(line, Skip):
                bad = bad or line
            else:
                paragraph.append(line.strip())
            continue
        if bad is not None:
            yield bad.source, Skip(f"{name}:{start}", f"paragraph skipped: {bad.reason}")
            first = False
        elif paragraph:
            body = " ".join(paragraph)
            is_header = first and len(paragraph) == 1 and len(body) < 100 and not body.endswith(".")
            first = False
            if not is_header:
                yield f"{name}:{start}", {"abstract": body}
        paragraph, bad = [], None


def _ended(lines: Lines) -> Lines:
    yield from lines
    yield 0, ""


class RunOn(Exception):
    """A row longer than the record limit: a quote opened and never closed."""


class _Pushback:
    """Decoded lines with the means to read some of them again (after an unbalanced quote)."""

    def __init__(self, lines: Lines, limit: int) -> None:
        self.lines, self.limit = lines, limit
        self.again: list[tuple[int, str | Skip]] = []
        self.taken: list[tuple[int, str]] = []  # the lines of the row being read
        self.size = 0  # characters in ``taken``: a quote left open must not read the file whole
        self.bad: Skip | None = None

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        number, line = self.again.pop() if self.again else next(self.lines)
        if isinstance(line, Skip):
            self.bad = self.bad or line
            line = "\n"  # keeps the csv reader's line count; the row is skipped after
        self.taken.append((number, line))
        self.size += len(line)
        if self.size > self.limit and len(self.taken) > 1:
            raise RunOn
        return line

    def start_row(self) -> None:
        self.taken, self.bad, self.size = [], None, 0

    def read_again(self, lines: list[tuple[int, str]]) -> None:
        self.again.extend(reversed(lines))


def delimited(name: str, lines: Lines, delimiter: str, opts: IngestOptions,
              notices: list[str]) -> Iterator[tuple[str, dict | Skip]]:
    """Rows of a CSV/TSV keyed by the casefolded header (or the OpenReview scraper layout)."""
    csv.field_size_limit(sys.maxsize)  # the record limit is enforced on bytes, before parsing
    source = _Pushback(lines, opts.max_record_bytes)
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    reader = csv.reader(source, delimiter=delimiter, quoting=quoting)
    try:
        header = next(reader, None)
    except RunOn:
        raise InputError(f"{name}:1: the header row runs on past {opts.max_record_bytes:,} "
                         "characters (a quote never closed?); fix the first line") from None
    if header is None:
        return
    if source.bad is not None:
        raise InputError(f"{source.bad.source}: the header row is unreadable: {source.bad.reason}")
    header_lines = source.taken
    lowered = [h.strip().casefold() for h in header]
    if opts.abstract_field.casefold() not in lowered:
        layout = OPENREVIEW_LAYOUTS.get(len(header))
        if delimiter == "\t" and layout and opts.abstract_field == "abstract":
            notices.append(f"{name}: no header row; read as the OpenReview scraper layout "
                           f"({len(header)} columns)")
            lowered = list(layout)
            source.read_again(header_lines)
        else:
            raise InputError(
                f"{name}:1: no {opts.abstract_field!r} column (columns: "
                f"{', '.join(h.strip() for h in header)}); pass --abstract-field NAME")
    yield from _rows(name, source, lowered, delimiter)


def _rows(name: str, source: _Pushback, lowered: list[str], delimiter: str
          ) -> Iterator[tuple[str, dict | Skip]]:
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    reader = csv.reader(source, delimiter=delimiter, quoting=quoting)
    while True:
        source.start_row()
        try:
            row = next(reader, None)
        except RunOn:
            taken = source.taken
            where = f"{name}:{taken[0][0]}"
            yield where, Skip(where, f"a quoted field opened here runs on past {source.limit:,} "
                              "characters; close it or double it (\"\"); the lines after it "
                              "are read as records of their own")
            source.read_again(taken[1:])
            reader = csv.reader(source, delimiter=delimiter, quoting=quoting)  # a fresh state
            continue
        if row is None:
            return
        taken = source.taken
        first, end = taken[0][0], taken[-1][0]
        where = f"{name}:{first}"
        if source.bad is not None:
            yield where, source.bad
            continue
        if not any(cell.strip() for cell in row):
            continue
        # An unbalanced quote swallows the lines after it into one field. Skip only the
        # line that opened it and read the swallowed lines again as records of their own.
        if delimiter != "\t" and len(taken) > 1 and (
                len(row) != len(lowered) or not _well_quoted("".join(t for _, t in taken))):
            yield where, Skip(where, f"unbalanced quote: the field opened here runs on to "
                              f"line {end}; close it or double it (\"\"); the lines after "
                              "it are read as records of their own")
            source.read_again(taken[1:])
            continue
        if len(row) != len(lowered):
            yield where, Skip(where, f"has {len(row)} fields, the header has "
                              f"{len(lowered)}; check quoting/delimiters on this line")
            continue
        yield where, dict(zip(lowered, row, strict=True))


def _well_quoted(raw: str) -> bool:
    """True when ``raw`` parses as CSV under strict quoting (every quoted field closed, and
    followed by a delimiter or the end of the line)."""
    try:
        list(csv.reader(io.StringIO(raw, newline=""), strict=True))
    except csv.Error:
        return False
    return True


def looks_tabular(lines: list[str], delimiter: str, abstract_field: str) -> bool:
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
