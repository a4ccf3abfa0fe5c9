"""Text helpers shared by every sink: shortening for display, safe cells for XML and spreadsheets.

>>> shorten("We fine-tune a small model with instruction-tuned data.", 30, around=["data"])
'…with instruction-tuned data.'
>>> xml_safe("a\\x0cb\\x00c")
'abc'
>>> spreadsheet_cell("=HYPERLINK(\\"http://x\\")")
'\\'=HYPERLINK("http://x")'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

ELLIPSIS = "…"

# Characters XML 1.0 forbids (C0 controls but tab/LF/CR, lone surrogates, U+FFFE/U+FFFF): one in
# an attribute makes the whole GraphML file unreadable.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# A cell starting with one of these is a formula to Excel, LibreOffice and Google Sheets.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def xml_safe(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (they are dropped)."""
    return _XML_INVALID.sub("", text)


def spreadsheet_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: a leading ``= + - @`` gets a ``'`` in front.

    >>> spreadsheet_cell(None), spreadsheet_cell(0.5), spreadsheet_cell("-based")
    ('', '0.5', "'-based")
    """
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _first_hit(text: str, terms: Iterable[str]) -> tuple[int, int] | None:
    """Where the earliest of ``terms`` occurs in ``text`` (any case; longest wins a tie)."""
    folded = text.casefold()
    best: tuple[int, int] | None = None
    for term in terms:
        term = " ".join(term.split()).casefold()
        at = folded.find(term) if term else -1
        if at >= 0 and (best is None or (at, -(at + len(term))) < (best[0], -best[1])):
            best = (at, at + len(term))
    return best


def shorten(text: str, width: int = 80, around: Iterable[str] = ()) -> str:
    """``text`` on one line in at most ``width`` characters; every cut is marked with ``…``.

    With ``around``, the window keeps the first of those terms found (any case), with a
    little context before it and more after; else the start is kept. Cuts fall between words
    when a word boundary is near.

    >>> shorten("Short enough.", 20)
    'Short enough.'
    >>> shorten("We propose a method that makes caching cheap for long contexts.", 30)
    'We propose a method that…'
    >>> s = shorten("Many words come first and then the KV cache is explained at length here.",
    ...             36, around=["kv cache"])
    >>> s, len(s) <= 36
    ('…then the KV cache is explained at…', True)
    """
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    if width < 3:
        return text[:width]
    start, end = _first_hit(text, around) or (0, 0)
    # A little context before the term (a third of the room), the rest after it.
    lo = max(0, start - max(0, width - 2 - (end - start)) // 3)
    if lo > 0 and text[lo - 1] != " ":  # start at the beginning of a word when it is near
        space = text.rfind(" ", 0, lo)
        lo = space + 1 if lo - space < 15 else lo
    lo = min(start, max(lo, end - (width - 2)))  # the term itself always fits when it can
    if len(text) - lo <= width - 1:  # the end fits: cut the start only
        lo, hi = len(text) - (width - 1), len(text)
    else:
        hi = lo + width - (2 if lo > 0 else 1)
        if text[hi] != " ":  # end at a word boundary when one is near (not inside the term)
            space = text.rfind(" ", max(end, lo), hi)
            hi = space if space >= 0 and hi - space < 15 else hi
    if lo > 0 and text[lo - 1] != " ":  # still inside a word: start at the next one
        space = text.find(" ", lo, start)
        lo = space + 1 if 0 <= space < lo + 15 else lo
    head = ELLIPSIS if lo > 0 else ""
    tail = ELLIPSIS if hi < len(text) else ""
    return head + text[lo:hi].strip() + tail
