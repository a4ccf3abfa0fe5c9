"""How techniques rise and fall: the papers using each technique per period (year, month,
venue or category), and the techniques whose share of papers grew most.

A paper counts for a technique exactly as in ``kg shared`` (``kg.analysis.shared_targets``):
it uses the technique or a narrower concept; a mere mention (negated, contrasted, prior work)
counts only with ``include_mentions``. A period's share is the papers using the technique over
every paper of that period. Papers without a period (no year, no month, no venue, no
category) are counted apart in ``Trends.undated``, never dropped silently.

>>> from kg.pipeline import run
>>> corpus = run(["examples/iclr2025-seed.txt"])  # plain-text abstracts: no years
>>> found = trends(corpus, ["caching"])
>>> found.periods, found.undated == len(corpus), found.series[0].undated
((), True, 1)
"""

from __future__ import annotations

import html
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from pathlib import Path

from kg.analysis import AnalysisIndex, analysis_index, shared_targets, stored_result
from kg.analysis.index import Facets, facet_tables
from kg.analysis.stored import Blob, facet_papers, stored_trend, trend_counts
from kg.errors import KgError
from kg.fs import replacing
from kg.model import Corpus

BY = ("year", "month", "venue", "category")
# --rising compares the first and the last period holding at least MIN_PAPERS papers (a
# period of 3 papers makes any technique in one of them "rise" by 33 points), and ranks only
# techniques used by at least MIN_USES papers in those two periods together.
MIN_PAPERS = 20
MIN_USES = 3
SPARKS = "▁▂▃▄▅▆▇█"

_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
# How a paper was presented is not another venue: "ICLR 2024 poster" is ICLR 2024.
_PRESENTED = re.compile(r"\s+(poster|oral|spotlight|notable[\w\s%-]*|highlight|award)$",
                        re.IGNORECASE)
_YEAR = re.compile(r"\b(19|20)\d{2}\b")


@dataclass(frozen=True, slots=True)
class Series:
    """One technique's papers per period (``counts``, aligned with ``Trends.periods``), and
    how many of the papers using it have no period (``undated``)."""

    name: str
    counts: tuple[int, ...]
    undated: int = 0


@dataclass(frozen=True, slots=True)
class Trends:
    """Papers per period and each technique's series. ``compared`` (``rising`` only) holds
    the indexes of the first and the last period compared."""

    by: str
    periods: tuple[str, ...]
    papers: tuple[int, ...]  # every paper of each period (the share's denominator)
    undated: int  # papers in no period
    series: tuple[Series, ...]
    include_mentions: bool = False
    compared: tuple[int, int] | None = None

    def shares(self, series: Series) -> tuple[float | None, ...]:
        """Papers using it / papers of the period (None: a period without papers).

        >>> t = Trends("year", ("2024", "2025"), (200, 0), 0, ())
        >>> t.shares(Series("caching", (10, 0)))
        (0.05, None)
        """
        return tuple(c / n if n else None for c, n in zip(series.counts, self.papers,
                                                           strict=True))

    def change(self, series: Series) -> float:
        """The share in the last compared period minus the share in the first."""
        first, last = self._compared()
        shares = self.shares(series)
        return (shares[last] or 0.0) - (shares[first] or 0.0)

    def z(self, series: Series) -> float:
        """Two-proportion z statistic of ``change`` (|z| under 2: could well be noise).

        >>> t = Trends("year", ("a", "b"), (100, 100), 0, (), compared=(0, 1))
        >>> round(t.z(Series("x", (5, 20))), 2)
        3.21
        """
        first, last = self._compared()
        n1, n2 = self.papers[first], self.papers[last]
        c1, c2 = series.counts[first], series.counts[last]
        pooled = (c1 + c2) / (n1 + n2)
        spread = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
        return (c2 / n2 - c1 / n1) / spread if spread else 0.0

    def _compared(self) -> tuple[int, int]:
        if self.compared is None:
            raise ValueError("only the result of rising() compares two periods")
        return self.compared

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "by": self.by,
            "counting": "uses and mentions" if self.include_mentions else "uses",
            "periods": [{"period": p, "papers": n} for p, n in zip(self.periods, self.papers,
                                                                     strict=True)],
            "papers_without_period": self.undated}
        if self.compared is not None:
            out["compared"] = [self.periods[i] for i in self.compared]
        out["techniques"] = [self._series_dict(s) for s in self.series]
        return out

    def _series_dict(self, series: Series) -> dict[str, object]:
        shares = self.shares(series)
        out: dict[str, object] = {"name": series.name, "counts": list(series.counts),
                                  "shares": [None if s is None else round(s, 6)
                                             for s in shares],
                                  "without_period": series.undated}
        if self.compared is not None:
            out["change"] = round(self.change(series), 6)
            out["z"] = round(self.z(series), 3)
        return out


# ------------------------------------------------------------------ periods


def venue_name(venue: str) -> str:
    """The venue without how a paper was presented there.

    >>> venue_name("ICLR 2024 poster"), venue_name("CoRL 2025 Oral"), venue_name("CoRL 2024")
    ('ICLR 2024', 'CoRL 2025', 'CoRL 2024')
    """
    return _PRESENTED.sub("", " ".join(venue.split()))


def periods_of(facets: Facets, by: str) -> tuple[str, ...]:
    """The periods a paper falls in (several categories: several; none: no period).

    >>> periods_of(Facets(None, "2023-11-02", None, ()), "year")
    ('2023',)
    >>> periods_of(Facets(2023, None, None, ()), "month")
    ()
    """
    year, date, venue, categories = facets
    if by == "year":
        if year is None and date and date[:4].isdigit():
            year = int(date[:4])
        return (f"{year:04d}",) if year is not None else ()
    if by == "month":
        return (date[:7],) if date and _MONTH.match(date) else ()
    if by == "venue":
        return (venue_name(venue),) if venue and venue.strip() else ()
    if by == "category":
        return tuple(dict.fromkeys(c for c in categories if c))
    raise ValueError(f"--by {by!r}: use one of {', '.join(BY)}")


def ordered_periods(found: Iterable[str], by: str) -> list[str]:
    """Periods in order; years and months with no paper between the first and the last are
    filled in, so the axis is time.

    >>> ordered_periods(["2025-02", "2024-11"], "month")
    ['2024-11', '2024-12', '2025-01', '2025-02']
    """
    found = set(found)
    if not found:
        return []
    if by == "year":
        years = [int(y) for y in found]
        return [f"{y:04d}" for y in range(min(years), max(years) + 1)]
    if by == "month":
        first, last = (int(m[:4]) * 12 + int(m[5:]) - 1 for m in (min(found), max(found)))
        return [f"{m // 12:04d}-{m % 12 + 1:02d}" for m in range(first, last + 1)]
    if by == "venue":  # by the year in the name, then the name (no year: last)
        def key(venue: str) -> tuple:
            year = _YEAR.search(venue)
            return (year is None, year.group(0) if year else "", venue.casefold(), venue)
        return sorted(found, key=key)
    return sorted(found, key=lambda c: (c.casefold(), c))


@dataclass(frozen=True, slots=True)
class _Frame:
    periods: tuple[str, ...]
    papers: tuple[int, ...]
    undated: int
    facet_of: Mapping[str, int]  # paper id → number of its facets (a stored index's: lazy)
    spots: Mapping[int, tuple[int, ...]]  # facets number → period indexes (none: ())

    def count(self, pids: Iterable[str]) -> tuple[tuple[int, ...], int]:
        """Papers per period among ``pids``, and how many have no period."""
        facet_of = self.facet_of
        if isinstance(facet_of, Blob):  # read whole, then looked up once per paper counted
            facet_of = facet_of.whole()
        return self.spread(Counter(map(facet_of.__getitem__, pids)))

    def spread(self, numbers: Mapping[int, int]) -> tuple[tuple[int, ...], int]:
        """Papers per period from papers per facets number (each number's count goes to
        each of its periods), and how many have no period."""
        counts = [0] * len(self.periods)
        undated = 0
        for number, n in numbers.items():
            spots = self.spots[number]
            if not spots:
                undated += n
            for i in spots:
                counts[i] += n
        return tuple(counts), undated


def _frame(index: AnalysisIndex, by: str) -> _Frame:
    """Every period and its papers. A project's index keeps each distinct facets (a few
    dozen to some thousands) and the papers of each (``facet_papers``): a frame reads no
    paper. An index without them reads each paper's facets number (or the papers)."""
    if by not in BY:
        raise KgError(f"--by {by!r}: use one of {', '.join(BY)}")
    values, facet_of = index.facets, index.facet_of
    if not values:  # (an index written before they were kept; facet_of unread: it is big)
        values, facet_of = facet_tables({pid: r.paper for pid, r in index.papers.items()})
    found = {number: periods_of(value, by) for number, value in values.items()}
    periods = ordered_periods(chain.from_iterable(found.values()), by)
    at = {p: i for i, p in enumerate(periods)}
    spots = {number: tuple(at[p] for p in names) for number, names in found.items()}
    frame = _Frame(tuple(periods), (), 0, facet_of, spots)
    numbers = stored_result(index, "facet_papers")
    papers, undated = frame.spread(numbers if numbers is not None else facet_papers(facet_of))
    return _Frame(frame.periods, papers, undated, facet_of, spots)


def _series(index: AnalysisIndex, frame: _Frame, name: str) -> Series:
    """``name``'s series: from the counts a build stored for it, else from its postings."""
    numbers = stored_trend(index, name)
    if numbers is not None:
        return Series(name, *frame.spread(numbers))
    postings = [index.entity_papers.get(eid, ()) for eid in shared_targets(index, name)[2]]
    pids = postings[0] if len(postings) == 1 else set().union(*postings)
    return Series(name, *frame.count(pids))


# ------------------------------------------------------------------ queries


def trends(corpus: Corpus | AnalysisIndex, techniques: Sequence[str], *, by: str = "year",
           include_mentions: bool = False, min_confidence: float = 0.0) -> Trends:
    """Papers using each of ``techniques`` per period ``by`` (year, month, venue, category).

    Names resolve as in ``kg shared`` (entity names and aliases, vocabulary labels, any case;
    a narrower concept counts for a broader one); an unknown name raises NotFoundError with
    close matches.
    """
    index = analysis_index(corpus, include_mentions, min_confidence)
    frame = _frame(index, by)
    series = tuple(_series(index, frame, name) for name in techniques)
    return Trends(by, frame.periods, frame.papers, frame.undated, series, include_mentions)


def rising(corpus: Corpus | AnalysisIndex, *, by: str = "year", top: int = 20,
           min_papers: int = MIN_PAPERS, min_uses: int = MIN_USES,
           include_mentions: bool = False, min_confidence: float = 0.0) -> Trends:
    """The ``top`` techniques (and methods) whose share grew most from the first to the last
    period with at least ``min_papers`` papers, among those used by at least ``min_uses``
    papers in the two; each counts its narrower concepts as in ``kg shared``. Ties by name.
    """
    if by == "category":
        raise KgError("--rising compares the first and the last period: use --by year, "
                      "month or venue (categories have no order)")
    index = analysis_index(corpus, include_mentions, min_confidence)
    frame = _frame(index, by)
    big = [i for i, n in enumerate(frame.papers) if n >= min_papers]
    if len(big) < 2:
        sizes = ", ".join(f"{p}: {n}" for p, n in zip(frame.periods, frame.papers,
                                                       strict=True)) or "none"
        raise KgError(f"--rising needs two periods (--by {by}) of at least {min_papers} "
                      f"papers to compare; the graph has {sizes} ({frame.undated} papers "
                      "without one); lower --min-papers or choose another --by")
    first, last = big[0], big[-1]
    # (a project stores them per build; --include-mentions and others count them here)
    counted = stored_result(index, "trend_counts")
    if counted is None:
        counted = trend_counts(index, frame.facet_of)
    ranked = sorted(_compared(frame, counted, first, last, min_uses), key=itemgetter(0))
    return Trends(by, frame.periods, frame.papers, frame.undated,
                  tuple(Series(name, *frame.spread(numbers))
                        for (_, _, name), numbers in ranked[:top]),
                  include_mentions, (first, last))


def _compared(frame: _Frame, counted: Iterable[tuple[str, Mapping[int, int]]], first: int,
              last: int, min_uses: int) -> Iterator[tuple[tuple, Mapping[int, int]]]:
    """Each technique used by ``min_uses`` papers in periods ``first`` and ``last``, with
    its sort key (the change of its share, as ``Trends.change``, largest first; then its
    name): only the two periods are counted here, every period only for those listed."""
    ones = [{number for number, spots in frame.spots.items() if i in spots}
            for i in (first, last)]
    n1, n2 = frame.papers[first], frame.papers[last]
    for name, numbers in counted:
        c1, c2 = (_within(numbers, one) for one in ones)
        if c1 + c2 >= min_uses:
            yield (-((c2 / n2 or 0.0) - (c1 / n1 or 0.0)), name.casefold(), name), numbers


def _within(numbers: Mapping[int, int], one: set[int]) -> int:
    """The papers of ``numbers`` whose facets number is in ``one``, walking the smaller of
    the two (a broad technique on arXiv has thousands of facets numbers, a period a few)."""
    if len(one) < len(numbers):
        return sum(numbers.get(number, 0) for number in one)
    return sum(n for number, n in numbers.items() if number in one)


# ------------------------------------------------------------------ drawing


def sparkline(values: Sequence[float | None]) -> str:
    """One character per value, scaled from 0 to the largest; None is a space.

    >>> sparkline([0.0, 0.05, 0.1, None, 0.2])
    '▁▃▅ █'
    """
    top = max((v for v in values if v is not None), default=0.0)
    return "".join(" " if v is None else SPARKS[round(v / top * 7) if top else 0]
                   for v in values)


_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b",
            "#e377c2", "#7f7f7f", "#bcbd22")


def trends_html(found: Trends, title: str = "kg trends") -> str:
    """One self-contained HTML page (inline SVG, no script, no network): each technique's
    share per period as a line, and the counts in a table. Every name is escaped."""
    width, height, left, bottom = 760, 360, 56, 40
    n = len(found.periods)
    lines = [found.shares(s) for s in found.series]
    top = max((v for shares in lines for v in shares if v is not None), default=0.0) or 1.0

    def x(i: int) -> float:
        return left + (width - left - 64) * (i / (n - 1) if n > 1 else 0.5)

    def y(v: float) -> float:
        return 16 + (height - bottom - 16) * (1 - v / top)

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img">',
           f'<line x1="{left}" y1="{y(0):.1f}" x2="{width - 64}" y2="{y(0):.1f}" '
           'stroke="#999"/>']
    for frac in (0.5, 1.0):
        svg.append(f'<text x="{left - 6}" y="{y(top * frac) + 4:.1f}" text-anchor="end">'
                   f'{top * frac:.1%}</text>')
    step = max(1, n // 12)
    for i in range(0, n, step):
        svg.append(f'<text x="{x(i):.1f}" y="{height - bottom + 18}" text-anchor="middle">'
                   f'{html.escape(found.periods[i])}</text>')
    for k, (series, shares) in enumerate(zip(found.series, lines, strict=True)):
        colour = _COLOURS[k % len(_COLOURS)]
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(shares)
                          if v is not None)
        svg.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                   f'points="{points}"><title>{html.escape(series.name)}</title></polyline>')
        svg.extend(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"><title>'
                   f'{html.escape(series.name)}, {html.escape(found.periods[i])}: '
                   f'{series.counts[i]} of {found.papers[i]} ({v:.1%})</title></circle>'
                   for i, v in enumerate(shares) if v is not None)
    svg.append("</svg>")
    return _page(found, title, "\n".join(svg))


def _page(found: Trends, title: str, svg: str) -> str:
    legend = "".join(f'<li><span style="color:{_COLOURS[k % len(_COLOURS)]}">■</span> '
                     f"{html.escape(s.name)}</li>" for k, s in enumerate(found.series))
    head = "".join(f"<th>{html.escape(p)}<br><small>{n} papers</small></th>"
                   for p, n in zip(found.periods, found.papers, strict=True))
    rows = "".join(
        f"<tr><th>{html.escape(s.name)}</th>" + "".join(
            "<td>–</td>" if v is None else f"<td>{c} <small>{v:.1%}</small></td>"
            for c, v in zip(s.counts, found.shares(s), strict=True))
        + f"<td>{s.undated}</td></tr>" for s in found.series)
    counting = "uses and mentions" if found.include_mentions else "uses"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>body{{font:14px sans-serif;margin:2em}}"
        "svg text{font-size:11px;fill:#444}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "ul{list-style:none;padding:0}</style></head><body>"
        f"<h1>{html.escape(title)}</h1><p>Share of papers per {found.by} that use each "
        f"technique or a narrower one (counting {counting}). {found.undated} papers have no "
        f"{found.by} and are in no period.</p>{svg}<ul>{legend}</ul>"
        f"<table><tr><th></th>{head}<th>no {found.by}</th></tr>{rows}</table>"
        "</body></html>\n")


def write_html(found: Trends, path: str | Path, title: str = "kg trends") -> None:
    """Write ``trends_html`` to ``path`` (whole or not at all)."""
    with replacing(path) as tmp:
        tmp.write_text(trends_html(found, title), encoding="utf-8")
