"""The context-name rule: model, dataset and hardware names no vocabulary can know, typed by
their context ("on the X benchmark", "X-7B", "X GPUs"), and coined CamelCase names.

>>> from kg.model import Paper
>>> from kg.vocab import load_vocabulary
>>> doc = Document.of(Paper(id="p", abstract="We train Zeta-7B on the Omega3 benchmark."))
>>> [(c.span.text, c.type) for c in context_names(LabelIndex(load_vocabulary()), doc)]
[('Zeta-7B', 'Model'), ('Omega3', 'Dataset')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from kg.extract.document import Document
from kg.extract.words import (
    ADJECTIVE_TAIL,
    CAMEL,
    CAMEL_STOP,
    DATASET_AFTER,
    DATASET_BEFORE,
    EVALUATED_ON,
    HARDWARE_CONTEXT,
    HYPHEN_NAME,
    MODEL_AFTER,
    NUMBER_FORMAT,
    SIZE,
)
from kg.labels import LabelIndex
from kg.model import Candidate


def list_types(chosen: Sequence[Candidate], text: str) -> list[Candidate]:
    """A coined name listed with known models takes their type: "such as Pythia, INCITE,
    OpenLLaMA and TinyLlama models"."""
    out = list(chosen)
    for i, c in enumerate(out):
        if c.rule != "named-entity":
            continue
        for j in (i - 1, i + 1):
            if 0 <= j < len(out) and (out[j].concept or out[j].rule.startswith("context-")) \
                    and out[j].type in ("Model", "Dataset"):
                a, b = sorted((out[i], out[j]), key=lambda x: x.span.start)
                if re.fullmatch(r"(?:\s*,\s*[A-Z][\w\-.]*)*\s*(?:,|and|or|, and|, or)\s*",
                                text[a.span.end:b.span.start]):
                    out[i] = replace(c, type=out[j].type)
                    break
    return out


NUMBER_BEFORE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?\s*%?\s+$")
# Units and other capitals that follow numbers without being measures of quality.
UNITS = set("""GB MB KB TB PB GHZ MHZ HZ FPS MS US DB GPU GPUS TPU TPUS CPU CPUS USD EUR
FLOP FLOPS TFLOPS PFLOPS GPT LLM LLMS ICLR ICML CVPR ECCV ICCV ACL EMNLP NAACL AAAI IJCAI
KDD SIGIR CORL IROS ICRA RSS AI ML NLP CV RL AD BC CE ID""".split())  # noqa: SIM905


def context_names(index: LabelIndex, d: Document) -> list[Candidate]:
    """Names typed by the words around them (see the module docstring)."""
    text = d.text
    out: list[Candidate] = []
    last_dataset_end = -1
    for m in d.names:
        token = m.group(0)
        if any(label.type == "Model" for label in index.lookup_name(token)[0]):
            continue  # a known model family ("GPT-style"): the vocabulary match stands
        after = text[m.end():m.end() + 40]
        before = text[max(0, m.start() - 40):m.start()]
        sentence = text[d.sentence_of(m.start()).start:m.start()]  # (up to the name)
        span = d.span(m.start(), m.end())
        listed = last_dataset_end >= 0 and re.fullmatch(
            r"\s*(?:,|and|or|, and|, or)\s*", text[last_dataset_end:m.start()]) is not None
        if NUMBER_BEFORE.search(before) and token.isupper() and len(token) <= 6 and \
                token not in UNITS and not re.search(r"\d", token) and \
                d.paper.text.count("$", 0, m.start()) % 2 == 0:  # not inside $math$
            # "71.3 EM", "12.3 WER": an unknown measure reported next to its number
            out.append(Candidate(span, "Metric", "context-metric", None, 0.6))
        elif HARDWARE_CONTEXT.match(after) and re.search(r"\d", token):
            out.append(Candidate(span, "Hardware", "context-hardware", None, 0.7))
        elif not NUMBER_FORMAT.match(token) and _dataset_evidence(
                token, before, after, listed, sentence):
            # before the size and CamelCase tests: "the QM1B dataset", "TransNAS-Bench-101"
            out.append(Candidate(span, "Dataset", "context-dataset", None, 0.7))
            last_dataset_end = m.end()
        elif SIZE.search(token) or (MODEL_AFTER.match(after) and not token.isupper()):
            out.append(Candidate(span, "Model", "context-model", None, 0.65))
        elif CAMEL.match(token) and token not in CAMEL_STOP and not ADJECTIVE_TAIL.search(token):
            # FlexMatch, MinHash, OpenLLaMA, LipSDP: a coined name, most often a method; one
            # made with a dataset's name a dataset ("ImageNet-PI")
            type_ = "Dataset" if "Dataset" in (_known_parts(index, token) or ()) else "Method"
            out.append(Candidate(span, type_, "named-entity", None, 0.5))
        elif known := _known_parts(index, token):
            # "PO-RLHF", "UCB-VI": a name made with known ones is a new one, not matches of
            # its parts ("VI", variational inference); "SNLI-VE" is a dataset, "G-SchNet" and
            # "M2M-GNN" models.
            type_ = "Model" if MODEL_TAIL.search(token) else next(
                (t for t in ("Dataset", "Model") if t in known), "Method")
            out.append(Candidate(span, type_, "named-entity", None, 0.5))
        elif NUMBER_FORMAT.match(token):
            continue
        elif re.match(r"\s+(?:baselines?|algorithms?|policy|policies|planners?|solvers?)\b",
                      after) and not NUMBER_FORMAT.match(token):
            # "surpasses the RVT baseline", "the PPO algorithm": a method by name
            out.append(Candidate(span, "Method", "context-method", None, 0.65))
        elif token not in CAMEL_STOP and not re.fullmatch(r"[A-Z]+s", token) and (
                listed_as := _listed_as_method(sentence[-200:])) is not None:
            # "baselines such as SVGD and SVRG", "models such as S4D and S5"
            out.append(Candidate(span, listed_as, "context-method", None, 0.65))
    return out


# The names a list holds before the name at its end: "ToyMix, LargeMix and ".
_NAMES_BEFORE = r"(?:[A-Z][\w\-.]*\s*(?:,\s*and|,\s*or|,|and|or)\s*)*$"
# Names listed right after methods, baselines, algorithms or models ("variance-reduced methods
# (e.g., SVRG and SAGA)", "state space models like S4, LRU, and Mamba").
_KINDS = r"methods|baselines|algorithms|approaches|solvers|strategies|techniques|models"
METHOD_LIST = re.compile(r"\b(?P<kind>" + _KINDS + r")\b"
                         r"(?:(?!\b(?:with|using|via|on|" + _KINDS + r")\b)[^.;:]){0,60}?"
                         r"(?::|\bsuch\s+as|\bincluding|\blike|\(?e\.g\.,?)\s*" + _NAMES_BEFORE)


def _listed_as_method(before: str) -> str | None:
    """"Model" or "Method" when a name is listed after methods/baselines/models ``before`` it.

    >>> _listed_as_method("variance-reduced methods (e.g., SVRG and ")
    'Method'
    >>> _listed_as_method("state space models like S4, LRU, and ")
    'Model'
    """
    m = METHOD_LIST.search(before)
    if m is None:
        return None
    return "Model" if m.group("kind") == "models" else "Method"


def _known_parts(index: LabelIndex, token: str) -> set[str] | None:
    """The types of the vocabulary's names among the hyphen-joined parts of ``token`` ("GP",
    "UCB" in "GP-UCB"; "CIFAR-10" in "CIFAR-10-W"), or None when ``token`` is not such a name:
    the vocabulary knows it whole, no part is known, it ends as an adjective ("GNN-based"), it
    is a plural ("MM-LLMs", "CS-CNNs": a class, or the plural of a defined acronym), or it
    joins known metrics only ("TPR-FPR": both are meant).

    >>> from kg.vocab import load_vocabulary
    >>> index = LabelIndex(load_vocabulary())
    >>> [_known_parts(index, t) for t in ("SNLI-VE", "LLM-based", "COVID-19", "MM-LLMs",
    ...                                   "TPR-FPR")]
    [{'Dataset'}, None, None, None, None]
    """
    if not HYPHEN_NAME.fullmatch(token) or ADJECTIVE_TAIL.search(token) or \
            re.search(r"[A-Z]s$", token) or index.lookup(token):
        return None
    parts = token.split("-")
    types = {label.type for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)
             if j - i < len(parts) for label in index.lookup("-".join(parts[i:j]))}
    if all(index.lookup(part) for part in parts) and types == {"Metric"}:
        return None
    return types or None


# "M2M-GNN", "MCU-Net", "KNN-LM": a name ending in a kind of network is a model.
MODEL_TAIL = re.compile(r"-(?:[A-Z]*NNs?|[A-Za-z]*Nets?|[A-Z]*LMs?|[A-Za-z]*formers?|GPT|BERT|"
                        r"ViT)$")


# "seven datasets …: ToyMix, LargeMix and UltraLarge", "benchmarks such as X and Y": names
# listed right after the word datasets or benchmarks; after a comma ("two benchmark datasets,
# HM-EQA and OpenEQA") only names in a list (``_listed_as_dataset``).
DATASET_LIST = re.compile(r"\b(?:datasets|benchmarks)\b(?:(?!\b(?:with|using|via)\b)"
                          r"[^.;:]){0,80}?(?::|(?P<comma>,)|\bsuch\s+as|\bincluding|\bnamely)\s*"
                          + _NAMES_BEFORE)


def _dataset_evidence(token: str, before: str, after: str, listed: bool, sentence: str) -> bool:
    """Whether the words around a name (or the name itself) say it is a dataset."""
    return bool(DATASET_AFTER.match(after) or re.search(r"Bench", token)
                or ((DATASET_BEFORE.search(before) or listed)
                    and re.search(r"\d|bench|.QA$", token))
                # (not "LLMs", "AEs": a plural acronym names a kind of thing, not a dataset)
                or (EVALUATED_ON.search(before) is not None
                    and not re.fullmatch(r"[A-Z]+s?", token))
                or (("datasets" in sentence or "benchmarks" in sentence)
                    and _listed_as_dataset(sentence[-200:], after)))


def _listed_as_dataset(before: str, after: str) -> bool:
    """Whether a name ends a list of datasets ``before`` it (a list after a comma only when
    the name is one of several: "across benchmarks, GPSE-enhanced models" is no list).

    >>> _listed_as_dataset("on two benchmark datasets, ", " and OpenEQA")
    True
    >>> _listed_as_dataset("across a wide range of benchmarks, ", " models can")
    False
    """
    m = DATASET_LIST.search(before)
    return m is not None and (m.group("comma") is None or m.end("comma") < len(before.rstrip())
                              or re.match(r"\s*(?:,|and\b|or\b)", after) is not None)

