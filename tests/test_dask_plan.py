"""The corpus-level plan as group-bys: ``kg.distributed.plan_on_cluster`` on a real Dask cluster
(a scheduler and 2 worker processes over TCP on 127.0.0.1) equals ``kg.resolve.plan``; and the
pure map and reduce pieces both are made of, one rule at a time."""

from __future__ import annotations

import os
import shutil
from itertools import permutations
from pathlib import Path

import pytest
from conftest import SEED

from kg.errors import ServiceError
from kg.ingest import IngestOptions, read_inputs
from kg.model import Candidate, Entity, Extraction, Paper, Span
from kg.pipeline import extract_each, read_papers
from kg.resolve import (
    Plan,
    acronyms,
    entity_table,
    number_ids,
    plan,
    prepare,
    recurring_terms,
    settle,
)
from kg.vocab import CONCEPT_NS, load_vocabulary, ontology_dir

try:
    import distributed
except ImportError:
    distributed = None

ICLR = "openreview-2024/ICLR_cc_2024_Conference.tsv"


@pytest.fixture(scope="module")
def client():
    """A Client of a LocalCluster for the module: 2 worker processes on 127.0.0.1."""
    if distributed is None:  # the extra is not installed: CI installs it, so there this fails
        if os.environ.get("KG_REQUIRE_SERVICES") == "1":
            pytest.fail("dask is not installed")
        pytest.skip("dask is not installed: pip install -e '.[test,dask]'")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        yield client


def on_cluster(preps, client, **kwargs) -> Plan:
    from kg.distributed import plan_on_cluster

    return plan_on_cluster(preps, client, **kwargs)


def same(got: Plan, want: Plan) -> bool:
    """Equal, entities in the same order too (exports iterate them)."""
    return got == want and list(got.entities.items()) == list(want.entities.items())


@pytest.fixture(scope="module")
def seed_preps():
    return [prepare(e) for e in extract_each(read_papers([SEED])[0])]


@pytest.mark.parametrize("npartitions", [None, 1, 5])
def test_the_seed_planned_on_the_cluster_equals_plan(seed_preps, client, npartitions):
    want = plan(seed_preps)
    assert same(on_cluster(seed_preps, client, npartitions=npartitions), want)
    assert len(want.entities) > 100  # (the seed keeps no pending term: the rest do)


def test_2000_iclr_papers_planned_on_the_cluster_equal_plan(corpora_dir, client):
    papers = read_inputs([corpora_dir / ICLR], IngestOptions()).papers[:2000]
    from kg.distributed import extract_each as extract_on_cluster

    found = list(extract_on_cluster(papers, scheduler=client.scheduler.address))
    preps = [prepare(e) for e in found]
    assert len(preps) == 2000
    want = plan(preps)
    got = on_cluster(preps, client)
    assert same(got, want)
    assert sum(map(len, want.kept)) > 20 and len(want.entities) > 3000


def test_no_papers_is_an_empty_plan(client):
    assert on_cluster([], client) == plan([]) == Plan((), (), {})


# ------------------------------------------------------------ the vocabulary goes by its folder


def renamed_vocabulary(preps, folder: Path) -> tuple[str, str]:
    """A copy of the vocabulary in ``folder``; the preferred label of a concept the papers
    use, changed: (concept IRI, new label)."""
    shutil.copytree(ontology_dir() / "vocab", folder)
    vocab = load_vocabulary()
    for iri in sorted({key[1] for prep in preps for key in prep.keys
                       if key[1].startswith(CONCEPT_NS)}):
        label = f'skos:prefLabel "{vocab.concepts[iri].pref_label}"@en'
        files = [p for p in sorted(folder.glob("*.ttl")) if label in p.read_text("utf-8")]
        if len(files) == 1 and files[0].read_text("utf-8").count(label) == 1:
            text = files[0].read_text("utf-8")
            files[0].write_text(text.replace(label, label[:-4] + ' renamed"@en'), "utf-8")
            return iri, vocab.concepts[iri].pref_label + " renamed"
    raise AssertionError("no concept to rename")


def test_workers_load_the_vocabulary_of_the_folder_given(seed_preps, client, tmp_path):
    iri, label = renamed_vocabulary(seed_preps, tmp_path / "vocab")
    want = plan(seed_preps, load_vocabulary(tmp_path / "vocab"))
    assert label in {e.name for e in want.entities.values() if e.concept == iri}
    assert same(on_cluster(seed_preps, client, vocabulary=tmp_path / "vocab"), want)


def test_workers_with_another_vocabulary_are_refused(seed_preps, client, tmp_path,
                                                     monkeypatch):
    # As where the workers were given another copy of the vocabulary: this process plans
    # with a concept renamed, the worker processes read the folder as it is.
    import kg.distributed

    folder = tmp_path / "vocab"
    shutil.copytree(ontology_dir() / "vocab", folder)
    renamed_vocabulary(seed_preps, tmp_path / "changed")
    changed = load_vocabulary(tmp_path / "changed")
    monkeypatch.setattr(kg.distributed, "_vocabulary", lambda folder: changed)
    with pytest.raises(ServiceError, match="run another kg or vocabulary") as caught:
        on_cluster(seed_preps, client, vocabulary=folder)
    assert client.scheduler.address in str(caught.value)


# ------------------------------------------- the pure pieces, on preps made by hand (both ways)


@pytest.fixture(params=["plan", "plan_on_cluster"])
def planner(request):
    if request.param == "plan":
        return plan
    client = request.getfixturevalue("client")
    return lambda preps: on_cluster(preps, client)


def extraction(pid: str, text: str, *found: tuple[str, str | None], pending: tuple = ()):
    """Method candidates for each (surface, long form), then pending terms."""
    def candidate(surface: str, long_form: str | None = None, rule: str = "test"):
        start = text.index(surface)
        return Candidate(Span(surface, start, start + len(surface)), "Method", rule,
                         long_form=long_form)

    return Extraction(Paper(pid, text), tuple(candidate(*f) for f in found), (),
                      pending=tuple(candidate(p, rule="term") for p in pending))


def ids_of(decided: Plan) -> list[tuple[str, ...]]:
    return list(decided.entity_ids)


def test_a_short_form_defined_one_way_joins_its_long_form(planner):
    preps = [prepare(extraction("a", "We propose Rotated Runtime Smooth (RRS).",
                                ("RRS", "Rotated Runtime Smooth"))),
             prepare(extraction("b", "RRS is fast.", ("RRS", None)))]
    assert ids_of(planner(preps)) == [("method/rotated-runtime-smooth",)] * 2


def test_a_short_form_defined_two_ways_joins_neither(planner):
    preps = [prepare(extraction("a", "We propose Rotated Runtime Smooth (RRS).",
                                ("RRS", "Rotated Runtime Smooth"))),
             prepare(extraction("b", "We propose Random Rank Sampling (RRS).",
                                ("RRS", "Random Rank Sampling"))),
             prepare(extraction("c", "RRS is fast.", ("RRS", None)))]
    assert ids_of(planner(preps)) == [("method/rotated-runtime-smooth",),
                                      ("method/random-rank-sampling",), ("method/rrs",)]
    rrs, long = ("Method", "rrs"), ("Method", "rotated runtime smooth")
    assert acronyms([(rrs, {long})]) == {rrs: long}
    assert acronyms([(rrs, {long, ("Method", "random rank sampling")})]) == {}


def test_a_pending_term_is_kept_where_another_paper_uses_it(planner):
    preps = [prepare(extraction("a", "We use sparse routing and warm mixing.",
                                pending=("sparse routing", "warm mixing"))),
             prepare(extraction("b", "Sparse routing helps.", pending=("Sparse routing",)))]
    decided = planner(preps)
    assert decided.kept == ((0,), (0,))
    assert ids_of(decided) == [("method/sparse-routing",)] * 2
    assert recurring_terms([("sparse routing", 2), ("warm mixing", 1)]) == {"sparse routing"}


CONCEPT = f"{CONCEPT_NS}method/foo"


def named(ident: str, name: str, concept: str | None = None) -> tuple:
    from kg.resolve import slugify

    slug = concept.rsplit("/", 1)[1] if concept else slugify(name)
    return (("Method", ident), Entity(f"method/{slug}", "Method", name, (), concept))


def test_an_id_collision_gets_a_suffix_numbered_in_key_order():
    keys = [named("foo", "Foo"), named(CONCEPT, "foo", CONCEPT), named("foo2", "FOO")]
    for order in permutations(keys):
        got = {key[1]: entity.id for key, entity in number_ids(order)}
        # "foo" comes first in key order and holds the id; the concept gets a suffix from its
        # IRI; "foo2" (no concept, as "foo") shares the id.
        assert got == {"foo": "method/foo", CONCEPT: "method/foo-thod-foo",
                       "foo2": "method/foo"}
    table = entity_table(dict(number_ids(keys)[::-1]))  # in key order, whatever the given
    assert list(table) == ["method/foo", "method/foo-thod-foo"]
    assert table["method/foo"].name == "FOO"  # of keys sharing an id, the last


def test_groups_whose_suffixed_ids_meet_are_numbered_as_one():
    # A suffixed id of one group is another group's id: numbered group by group, "z" would
    # take that id; numbered at once, as plan numbers every key, "z" is suffixed in turn.
    every = [named("afoo", "Foo"), named(CONCEPT, "foo", CONCEPT),
             named("z", "Foo Thod Foo")]
    groups: dict[str, list] = {}
    for key, entity in every:
        groups.setdefault(entity.id, []).append((key, entity))
    got = settle((base, number_ids(group)) for base, group in groups.items())
    assert got == dict(number_ids(every))
    assert got[("Method", "z")].id == "method/foo-thod-foo-z"
