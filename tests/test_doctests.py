"""The examples in the docstrings of the core modules run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["kg.errors", "kg.model", "kg.vocab", "kg.ingest", "kg.extract", "kg.resolve",
           "kg.io", "kg.pipeline", "kg.evaluate", "kg.exports", "kg.progress"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, monkeypatch):
    from conftest import ROOT

    monkeypatch.chdir(ROOT)
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
