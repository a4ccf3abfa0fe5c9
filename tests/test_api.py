"""The public API in kg/__init__.py: every name resolves, and importing kg stays light."""

from __future__ import annotations

import subprocess
import sys

import kg


def test_every_public_name_resolves_to_the_library_function():
    from kg.analysis import related
    from kg.pipeline import run

    assert all(getattr(kg, name) is not None for name in kg.__all__)
    assert kg.related is related and kg.run is run


def test_public_names_survive_their_submodules_being_imported():
    # Importing a submodule sets it as an attribute of kg: the API names must not collide.
    import kg.extract
    import kg.resolve

    assert callable(kg.extract_papers) and callable(kg.resolve_corpus)


def test_import_kg_does_not_import_spacy_or_rdflib():
    code = "import sys, kg; print(sorted({'spacy', 'rdflib', 'kg.pipeline'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
