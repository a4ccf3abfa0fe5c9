"""Where kg's shipped data folders are: ``ontology``, ``sparql`` and ``cypher``.

A wheel carries them inside the package (``kg/_data/NAME``, see pyproject.toml); a source
checkout or an editable install has them next to ``kg/``. Every reader asks ``data_dir``.

>>> (data_dir("cypher") / "papers-sharing-technique.cypher").is_file()
True
"""

from __future__ import annotations

from pathlib import Path

from kg.errors import KgError

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder of shipped data ``name``: the installed copy, else the source checkout's."""
    candidates = (_PACKAGE / "_data" / name, _PACKAGE.parent / name)
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    raise KgError(f"kg's {name!r} data folder is missing (looked in "
                  f"{', '.join(str(c) for c in candidates)}); reinstall kg")
