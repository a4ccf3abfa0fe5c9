"""Where kg's shipped data folders are: ``ontology``, ``sparql`` and ``cypher``; and where a
span model named on the command line is.

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


# The span models shipped inside the package (kg.extract.span_model).
SPAN_MODELS = _PACKAGE / "extract" / "models"


def is_model_path(name: str) -> bool:
    """Whether a ``--model`` value names a directory ("./m", "/x/m") rather than a shipped model.

    >>> is_model_path("kg-span"), is_model_path("./kg-span"), is_model_path("/tmp/m")
    (False, True, True)
    """
    return "/" in name or name.startswith(".")


def span_model_path(name: str, shipped: Path = SPAN_MODELS) -> Path:
    """The directory of span model ``name``: itself when it is a path, else ``shipped/name``."""
    return Path(name) if is_model_path(name) else shipped / name
