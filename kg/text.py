"""Text helpers shared by every sink: safe cells for XML and spreadsheets, and shortening.

>>> xml_safe("a\\x0cb\\x00c")
'abc'
>>> spreadsheet_cell("=HYPERLINK(\\"http://x\\")")
'\\'=HYPERLINK("http://x")'
"""

from __future__ import annotations

import re

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
