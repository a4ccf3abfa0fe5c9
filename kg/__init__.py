"""kg — a knowledge-graph builder for machine-learning research abstracts.

The stages, each a module: ingest → extract → resolve → (rdf, neo4j, analysis, viz).

>>> from kg.model import ENTITY_TYPES
>>> "Technique" in ENTITY_TYPES
True
"""

__version__ = "0.1.0"
