"""The examples in the docstrings of every kg module run and hold.

Modules are found by walking the package, so a new module's examples run without anyone
adding it to a list.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
from conftest import ROOT

import kg

MODULES = sorted({"kg", *(m.name for m in pkgutil.walk_packages(kg.__path__, "kg."))}
                 - {"kg.__main__"})  # importing __main__ runs the CLI


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # examples read examples/iclr2025-seed.txt
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


@pytest.mark.parametrize("name", ["kg.analysis", "kg.viz", "kg.neo4j.admin", "kg.text"])
def test_modules_that_once_had_silent_examples_now_run_them(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 3 and result.failed == 0
