"""Benchmark: kg-span against rules only — gold-set quality, model speed, end-to-end speed.

    PYTHONPATH=. .venv/bin/python bench/span_model.py quality [--model kg-span] [--scirex]
    PYTHONPATH=. .venv/bin/python bench/span_model.py speed [--model kg-span] [--n 1000]
    PYTHONPATH=. .venv/bin/python bench/span_model.py architectures [--n 600]

``quality``: entity P/R/F1 for rules only and rules + model on every tests/data/*-gold.jsonl,
pooled (counts summed over the sets), per type (pooled), and shared-technique pairs F1 per set;
how many of the true positives the model adds are names the vocabulary lacks. dev-gold chose
the thresholds, so the pooled figures are also given without it. ``--scirex``: the same
comparison on SciREX train's abstracts (salient entities, Method/Task/Metric/Material→Dataset,
typed and untyped). ``speed``: abstracts/CPU-s of the model alone (beam, as kg runs it; and
spaCy's greedy nlp.pipe) and of `kg extract ICLR_cc_2024_Conference.tsv --workers 1` end to
end, rules only and with the model, back to back. ``architectures``: untrained but initialised
candidates (tok2vec width/depth, ner hidden width) through nlp.pipe: the cost of the network
alone. Figures, not assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from kg.evaluate import Counts, find_corpora, load_gold, score
from kg.extract import LabelIndex
from kg.model import ENTITY_TYPES, Corpus, Paper
from kg.pipeline import extract_all
from kg.resolve import resolve

ROOT = Path(__file__).resolve().parent.parent
ICLR = "ICLR_cc_2024_Conference.tsv"


def _add(total: Counts, c: Counts) -> None:
    for attr in ("tp", "fn", "tp_pred", "fp"):
        setattr(total, attr, getattr(total, attr) + getattr(c, attr))


def _row(c: Counts) -> str:
    return f"{c.precision:.3f} / {c.recall:.3f} / {c.f1:.3f}"


def _hits(gold, corpus: Corpus) -> list[set[str]]:
    """Per paper, the gold core entities (type:name) found."""
    out = []
    for g, result in zip(gold, corpus.results, strict=True):
        forms = []
        for eid, spans in result.mentions:
            e = corpus.entities[eid]
            forms.append((e.type, {_key(s) for s in (e.name, *e.aliases,
                                                     *(s.text for s in spans))}))
        out.append({f"{ge.type}:{ge.name}" for ge in g.entities if ge.core and any(
            t == ge.type and f & ge.surfaces for t, f in forms)})
    return out


def _key(text: str) -> str:
    from kg.extract import match_key
    return match_key(text)


def quality(model: str, corpora: Path) -> None:
    from kg.vocab import load_vocabulary

    index = LabelIndex(load_vocabulary())
    gold_files = sorted((ROOT / "tests" / "data").glob("*-gold.jsonl"))
    pooled = {m: Counts() for m in ("rules", "model")}
    held = {m: Counts() for m in ("rules", "model")}
    per_type = {m: {t: Counts() for t in ENTITY_TYPES} for m in ("rules", "model")}
    gained = gained_new = lost = 0
    print("| set | rules P / R / F1 | rules+model P / R / F1 | pairs F1 rules → +model |")
    print("|---|---|---|---|")
    for path in gold_files:
        gold = load_gold(path, corpora)
        papers = [g.paper for g in gold]
        reports, hits = {}, {}
        for m, name in (("rules", None), ("model", model)):
            corpus = resolve(extract_all(papers, trained_model=name))
            reports[m] = score(gold, corpus)
            hits[m] = _hits(gold, corpus)
            _add(pooled[m], reports[m].overall)
            if path.name != "dev-gold.jsonl":
                _add(held[m], reports[m].overall)
            for t in ENTITY_TYPES:
                _add(per_type[m][t], reports[m].per_type[t])
        for g, before, after in zip(gold, hits["rules"], hits["model"], strict=True):
            new = after - before
            lost += len(before - after)
            gained += len(new)
            surfaces = {f"{ge.type}:{ge.name}": ge.surfaces for ge in g.entities}
            gained_new += sum(1 for k in new if not any(index.lookup(s)
                                                        for s in surfaces[k]))
        print(f"| {path.name} | {_row(reports['rules'].overall)} | "
              f"{_row(reports['model'].overall)} | {reports['rules'].pairs.f1:.3f} → "
              f"{reports['model'].pairs.f1:.3f} |")
    print(f"| pooled | {_row(pooled['rules'])} | {_row(pooled['model'])} | |")
    print(f"| pooled without dev | {_row(held['rules'])} | {_row(held['model'])} | |")
    print("\n| type | rules P / R / F1 | rules+model P / R / F1 |\n|---|---|---|")
    for t in ENTITY_TYPES:
        print(f"| {t} | {_row(per_type['rules'][t])} | {_row(per_type['model'][t])} |")
    print(f"\ngold entities found only with the model: {gained} ({gained_new} of them names "
          f"no vocabulary label matches); found only without it: {lost}")


def _detokenise(text: str) -> str:
    """SciREX's tokens joined as a writer would ("End-To-End", "(DRCN).")."""
    import re

    text = re.sub(r" ([-/]) ", r"\1", text)
    text = re.sub(r" ([,.;:)\]?!%])", r"\1", text)
    return re.sub(r"([(\[]) ", r"\1", text)


def scirex(model: str, corpora: Path, limit: int = 0) -> None:
    """SciREX train abstracts (the first section: title and abstract): the salient entities
    with a mention there are the gold (type from those mentions; Material → Dataset)."""
    mapping = {"Method": "Method", "Task": "Task", "Metric": "Metric", "Material": "Dataset"}
    records = [json.loads(line) for line in
               (corpora / "scirex-train" / "train.jsonl").read_text().splitlines()]
    papers, gold = [], []
    for r in records[:limit or None]:
        words = r["words"]
        start, end = r["sections"][0]  # "document : <title> <abstract>"; [1] is the body
        if words[start:start + 2] == ["document", ":"]:
            start += 2
        text = _detokenise(" ".join(words[start:end]))
        entities = {}
        for name, mentions in r["coref"].items():
            types = {t for s, e, t in r["ner"] if [s, e] in mentions}
            inside = [(s, e) for s, e in mentions if start <= s and e <= end]
            if inside and types:
                entities[name] = (mapping[sorted(types)[0]],
                                  {_key(" ".join(words[s:e])) for s, e in inside})
        papers.append(Paper(id=r["doc_id"], abstract=text))
        gold.append(entities)
    for label, name in (("rules", None), ("rules+model", model)):
        corpus = resolve(extract_all(papers, trained_model=name))
        typed = untyped = total = 0
        for entities, result in zip(gold, corpus.results, strict=True):
            found = []
            for eid, spans in result.mentions:
                e = corpus.entities[eid]
                found.append((e.type, {_key(s) for s in (e.name, *e.aliases,
                                                         *(s.text for s in spans))}))
            for type_, surfaces in entities.values():
                total += 1
                typed += any(t == type_ and f & surfaces for t, f in found)
                untyped += any(f & surfaces for _, f in found)
        print(f"SciREX train, {len(papers)} abstracts, {total} salient entities: {label} finds "
              f"{typed / total:.3f} typed, {untyped / total:.3f} untyped")


def speed(model: str, corpora: Path, n: int) -> None:
    import spacy  # noqa: F401  (imported before timing)

    from kg.extract import span_model
    from kg.ingest import read_inputs

    nlp = span_model.load(model)
    texts = [p.text for p in read_inputs([corpora / "openreview-2024" / ICLR]).papers[:n]]
    list(span_model.predict(nlp, texts[:64]))
    t = time.process_time()
    list(span_model.predict(nlp, texts))
    beam = len(texts) / (time.process_time() - t)
    t = time.process_time()
    list(nlp.pipe(texts, batch_size=64))
    greedy = len(texts) / (time.process_time() - t)
    print(f"model alone, {len(texts)} ICLR 2024 abstracts: span_model.predict {beam:.0f}/CPU-s "
          f"(beam width {span_model.BEAM_WIDTH}, as kg runs it), nlp.pipe {greedy:.0f}/CPU-s")
    size = sum(p.stat().st_size for p in span_model.MODELS.joinpath(model).rglob("*")
               if p.is_file())
    print(f"model size on disk: {size / 1e6:.1f} MB")
    papers = len(read_inputs([corpora / "openreview-2024" / ICLR]).papers)
    for label, extra in (("rules only", []), ("rules + model", ["--model", model]),
                         ("rules only", []), ("rules + model", ["--model", model])):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "kg", "extract",
                        str(corpora / "openreview-2024" / ICLR), "--workers", "1",
                        "--format", "jsonl", "-o", os.devnull, *extra],
                       check=True, capture_output=True, cwd=ROOT)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        print(f"kg extract {ICLR} --workers 1, {label}: {papers / cpu:.0f} abstracts/CPU-s "
              f"({cpu:.1f} CPU-s)")


def architectures(corpora: Path, n: int) -> None:
    import spacy
    from spacy.training import Example
    from thinc.api import Config

    from kg.extract.nlp import register_tokenizer
    from kg.ingest import read_inputs

    register_tokenizer()
    texts = [p.text for p in read_inputs([corpora / "openreview-2024" / ICLR]).papers[:n]]
    base = Config().from_disk(ROOT / "training" / "kg-span.cfg", interpolate=False)
    print("| tok2vec width, depth; ner hidden | greedy nlp.pipe /CPU-s | beam 4 /CPU-s |")
    print("|---|---|---|")
    for width, depth, hidden in ((96, 4, 64), (64, 2, 64), (64, 1, 64), (32, 2, 64),
                                 (64, 2, 32)):
        cfg = Config(base).merge({"components": {
            "tok2vec": {"model": {"encode": {"width": width, "depth": depth}}},
            "ner": {"model": {"hidden_width": hidden}}}}).interpolate()
        nlp = spacy.util.load_model_from_config(cfg, auto_fill=True, validate=True)
        docs = [nlp.make_doc(t) for t in texts[:20]]
        labels = (ENTITY_TYPES * 3)[:len(docs)]
        nlp.initialize(lambda docs=docs, labels=labels: [Example.from_dict(
            d, {"entities": [(0, len(d[0].text), label)]})
            for d, label in zip(docs, labels, strict=True)])
        list(nlp.pipe(texts[:50]))
        t = time.process_time()
        list(nlp.pipe(texts, batch_size=64))
        greedy = len(texts) / (time.process_time() - t)
        ner, tok2vec = nlp.get_pipe("ner"), nlp.get_pipe("tok2vec")
        t = time.process_time()
        for i in range(0, len(texts), 64):
            ner.beam_parse(list(tok2vec.pipe(nlp.make_doc(x) for x in texts[i:i + 64])),
                           beam_width=4)
        beam = len(texts) / (time.process_time() - t)
        print(f"| {width}, {depth}; {hidden} | {greedy:.0f} | {beam:.0f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["quality", "speed", "architectures"])
    parser.add_argument("--model", default="kg-span")
    parser.add_argument("--corpora", type=Path, default=None)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--scirex", action="store_true")
    args = parser.parse_args()
    corpora = args.corpora or find_corpora(ROOT / "tests" / "data" / "dev-gold.jsonl")
    if args.what == "quality":
        quality(args.model, corpora)
        if args.scirex:
            scirex(args.model, corpora)
    elif args.what == "speed":
        speed(args.model, corpora, args.n)
    else:
        architectures(corpora, args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
