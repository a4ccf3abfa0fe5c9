"""Shared fixtures: the demo corpus, extracted once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "examples" / "iclr2025-seed.txt"
DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="session")
def corpora_dir() -> Path:
    """../shared/corpora (or $KG_CORPORA): licensed-for-testing data we must not copy in."""
    import os

    from kg.evaluate import find_corpora

    found = find_corpora(DATA / "dev-gold.jsonl")
    if found is None or not (found / "openreview-2024").is_dir():
        message = "the shared corpora are not here; set KG_CORPORA=/path/to/shared/corpora"
        if os.environ.get("KG_REQUIRE_SERVICES") == "1":  # CI: the quality floors must run
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def seed_corpus():
    from kg.pipeline import run

    return run([SEED])


def paper_with(corpus, needle: str):
    """The one result whose abstract contains ``needle``."""
    (result,) = [r for r in corpus.results if needle in r.paper.abstract]
    return result


def names_of(corpus, result, type_: str | None = None) -> set[str]:
    return {corpus.entities[eid].name for eid in result.entity_ids
            if type_ is None or corpus.entities[eid].type == type_}


@pytest.fixture(scope="session")
def seed_rdf_dir(seed_corpus, tmp_path_factory) -> Path:
    """The demo corpus built as `kg build` builds it (without graph.html)."""
    from kg import project
    from kg.pipeline import read_papers

    out = tmp_path_factory.mktemp("rdf")
    project.build(out, read_papers([SEED])[0], formats=["all", "-html"])
    return out
