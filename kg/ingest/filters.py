"""Filters applied while reading: ``--where``, ``--since``/``--until`` (``--limit`` counts
kept papers in ``kg.ingest.stream_papers``).

>>> from kg.model import Paper
>>> keep = PaperFilter.parse(("category=cs.LG", "venue~iclr"), since="2023")
>>> p = Paper("a", "x", categories=("cs.LG", "cs.AI"), venue="ICLR 2024", date="2024-01-05")
>>> keep.reject(p) is None, keep.reject(Paper("b", "x", categories=("cs.LG",), venue="ICLR"))
(True, 'no date (--since/--until)')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kg.errors import InputError
from kg.model import Paper

# A --where name → the Paper field it reads (singular names for list fields read naturally).
FIELDS = {"id": "id", "title": "title", "abstract": "abstract", "author": "authors",
          "authors": "authors", "keyword": "keywords", "keywords": "keywords", "venue": "venue",
          "year": "year", "url": "url", "date": "date", "category": "categories",
          "categories": "categories", "link": "links", "links": "links"}
# Fields whose value is copied verbatim from a JSON record (not rebuilt, like an arXiv author
# "First Last" from ["Last", "First"], or a URL from an id): a condition on one of them cannot
# hold when its text is nowhere in the raw line, so the line need not be parsed.
RAW_FIELDS = frozenset({"categories", "venue", "keywords"})
_PLAIN = re.compile(r"^[\x20-\x7e]+$")
_CONDITION = re.compile(r"^\s*([A-Za-z_]+)\s*([=~])(.*)$", re.S)
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


@dataclass(frozen=True)
class Condition:
    """``field=value`` (exact, any item of a list field) or ``field~value`` (substring,
    case-insensitive)."""

    text: str
    field: str
    op: str
    value: str
    raw: bytes | None = None  # the value as it must appear in a raw JSON line, if it must

    def raw_miss(self, line: bytes) -> bool:
        """True when ``line`` cannot hold a match (its text is not in the line at all)."""
        if self.raw is None:
            return False
        return self.raw not in (line if self.op == "=" else line.lower())

    def matches(self, paper: Paper) -> bool:
        value = getattr(paper, self.field)
        values = value if isinstance(value, tuple) else (() if value is None else (value,))
        if self.op == "=":
            return any(str(v) == self.value for v in values)
        needle = self.value.casefold()
        return any(needle in str(v).casefold() for v in values)


def parse_condition(text: str) -> Condition:
    """A ``--where`` condition, or InputError saying how to write one.

    >>> parse_condition("venue~ICLR").op
    '~'
    """
    match = _CONDITION.match(text)
    if not match or match.group(1).lower() not in FIELDS:
        raise InputError(f"--where {text!r}: write FIELD=VALUE (exact) or FIELD~TEXT "
                         f"(substring); FIELD is one of {', '.join(sorted(FIELDS))}")
    name, op, value = match.groups()
    field, value = FIELDS[name.lower()], value.strip()
    # Printable ASCII without a quote, backslash or slash reads the same inside a JSON string.
    plain = field in RAW_FIELDS and _PLAIN.match(value) and not set('"\\/') & set(value)
    raw = (value if op == "=" else value.lower()).encode() if plain else None
    return Condition(text, field, op, value, raw)


def check_date(option: str, value: str | None) -> str | None:
    if value is not None and not _DATE.match(value.strip()):
        raise InputError(f"{option} {value!r}: give a year (2024), a month (2024-05) or a day "
                         "(2024-05-01)")
    return value.strip() if value else None


@dataclass(frozen=True)
class PaperFilter:
    """Every condition must hold (AND); a date filter drops papers that have no date."""

    where: tuple[Condition, ...] = ()
    since: str | None = None
    until: str | None = None

    @classmethod
    def parse(cls, where=(), since: str | None = None, until: str | None = None
              ) -> PaperFilter:
        return cls(tuple(parse_condition(w) for w in where), check_date("--since", since),
                   check_date("--until", until))

    def __bool__(self) -> bool:
        return bool(self.where or self.since or self.until)

    def raw_reject(self, line: bytes) -> str | None:
        """The condition a raw JSON line cannot meet (so it need not be parsed), or None.

        >>> PaperFilter.parse(("category=cs.LG",)).raw_reject(b'{"categories": "cs.CV"}')
        'category=cs.LG'
        """
        for condition in self.where:
            if condition.raw_miss(line):
                return condition.text
        return None

    def reject(self, paper: Paper) -> str | None:
        """Why ``paper`` is filtered out (the condition it fails), or None to keep it."""
        for condition in self.where:
            if not condition.matches(paper):
                return condition.text
        if self.since or self.until:
            when = paper.date or (str(paper.year) if paper.year else None)
            if not when:
                return "no date (--since/--until)"
            # A year or month covers a span: compare its last day with --since, its first
            # day with --until, so --since 2024-03 keeps a paper dated only "2024".
            first = when + "-01-01"[len(when) - 4:] if len(when) < 10 else when
            last = when + "-12-31"[len(when) - 4:] if len(when) < 10 else when
            if self.since and last[:len(self.since)] < self.since:
                return f"before --since {self.since}"
            if self.until and first[:len(self.until)] > self.until:
                return f"after --until {self.until}"
        return None
