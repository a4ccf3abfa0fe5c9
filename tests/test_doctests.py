"""The examples in the docstrings of the core modules run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

EXTRACT = ["kg.extract", *(f"kg.extract.{m}" for m in (
    "acronyms", "document", "extractor", "links", "names", "nlp", "proposals", "select", "tasks",
    "terms", "text", "vocabulary", "words"))]
MODULES = ["kg.errors", "kg.model", "kg.vocab", "kg.ingest", *EXTRACT, "kg.resolve",
           "kg.io", "kg.pipeline", "kg.evaluate", "kg.exports", "kg.progress"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, monkeypatch):
    from conftest import ROOT

    monkeypatch.chdir(ROOT)
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
