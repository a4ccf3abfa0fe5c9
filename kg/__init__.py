"""kg — a knowledge-graph builder for machine-learning research abstracts.

The stages, each a module: ingest → extract → resolve → (rdf, neo4j, analysis, viz). The main
functions of each are importable from ``kg`` itself:

>>> import kg
>>> papers = kg.read_papers(["examples/iclr2025-seed.txt"]).papers
>>> corpus = kg.resolve_corpus(kg.extract_papers(papers))  # in one step: kg.run([files])
>>> len(corpus), "technique/quantization" in corpus.entities
(19, True)
>>> [use.paper.label.split(":")[0] for use in kg.shared(corpus, "caching")]
['FasterCache']
>>> kg.related(corpus, kg.find_paper(corpus, "model folding").id)[0].paper.label[:22]
'Rotated Runtime Smooth'
>>> graph = kg.corpus_graph(corpus)                  # networkx; kg.write_rdf for RDF files
>>> graph.has_node(kg.entity_iri("technique/quantization"))
True

Names are imported on first use, so ``import kg`` (and ``kg --help``) stays fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> "module:attribute"
_API: dict[str, str] = {
    # files -> papers
    "read_papers": "kg.pipeline:read_papers",
    "IngestOptions": "kg.ingest:IngestOptions",
    # papers -> extractions -> corpus
    # (not `extract`/`resolve`: importing those submodules would shadow the names)
    "extract_papers": "kg.pipeline:extract_all",
    "resolve_corpus": "kg.resolve:resolve",
    "run": "kg.pipeline:run",
    "load_corpus": "kg.pipeline:load_corpus",
    "read_jsonl": "kg.io:read_jsonl",
    "write_jsonl": "kg.io:write_jsonl",
    # corpus -> graphs
    "corpus_graph": "kg.analysis:corpus_graph",
    "write_rdf": "kg.rdf:write_rdf",
    "entity_iri": "kg.rdf:entity_iri",
    "paper_iri": "kg.rdf:paper_iri",
    # queries
    "find_paper": "kg.analysis:find_paper",
    "related": "kg.analysis:related",
    "shared": "kg.analysis:shared",
    "technique_counts": "kg.analysis:technique_counts",
    "clusters": "kg.analysis:clusters",
    # data
    "Corpus": "kg.model:Corpus",
    "Paper": "kg.model:Paper",
    "Entity": "kg.model:Entity",
    "Relation": "kg.model:Relation",
    "KgError": "kg.errors:KgError",
}

__all__ = sorted(_API)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module 'kg' has no attribute {name!r}")
    module, attr = _API[name].split(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])
