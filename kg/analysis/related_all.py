"""Every paper's related papers at once, as `kg related` ranks them, to the last bit.

The map lists, for each paper, the papers ``kg.analysis.related`` ranks first. One related()
call costs ~2 ms, so a conference's 5,000 of them would take most of the time to write its
map; ``related_all`` scores papers in blocks with numpy over the same index instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from kg.analysis import AnalysisIndex, analysis_index
from kg.model import Corpus

# numpy is imported where the scores are computed: `kg viz --help` imports this module.

BLOCK = 64  # papers related_all scores at once: (block × papers) cells stay in cache
_TOL = 1e-9  # far above the rounding difference of two summation orders


def related_all(corpus: Corpus, n: int) -> dict[str, list[tuple[str, float, list[str]]]]:
    """For every paper, what ``kg related ID -n n`` lists: (paper id, score, shared names).

    The ranking of ``kg.analysis.related`` — the same scores to the last bit, ties by paper
    id, shared names best first — for all papers at once: one related() call costs ~2 ms,
    and a conference's 5,000 of them took most of the time to write its map.

    Papers are scored in blocks with numpy, over the same index. Per pair of papers, an upper
    bound counts every shared feature and a lower bound only those both name directly (never
    dropped); a pair whose upper bound is below a paper's n-th lower bound cannot rank. The
    rest are scored as ``_shared_between`` scores them (an inherited concept broader than
    another shared feature is dropped), and those that may tie at the n-th place are summed
    again in related()'s order, so ties break alike.

    >>> from kg.analysis import related
    >>> from kg.pipeline import load_corpus
    >>> corpus = load_corpus(["examples/iclr2025-seed.txt"])
    >>> pid = corpus.results[0].paper.id
    >>> related_all(corpus, 3)[pid] == [(r.paper.id, r.score, [s.name for s in r.shared])
    ...                                 for r in related(corpus, pid, 3)]
    True
    """
    import numpy as np

    index = analysis_index(corpus)
    pids = list(index.papers)
    out: dict[str, list[tuple[str, float, list[str]]]] = {pid: [] for pid in pids}
    # Features that can link two papers: positive weight, two or more papers.
    keys = [k for k, rows in index.factors.items() if len(rows) > 1 and index.weight(k) > 0]
    if not keys or n < 1:
        return out
    a = _arrays(index, pids, keys)
    for start in range(0, len(pids), BLOCK):
        block = np.arange(start, min(start + BLOCK, len(pids)))
        c_row, c_other = _candidates(a, block, n)
        t = _terms(a, block[c_row], c_other)
        chosen, score = _top(a, t, c_row, c_other, len(block), n)
        # The shared features of each chosen pair, named in related()'s order.
        place = np.full(len(c_row), -1, dtype=np.intp)
        place[chosen] = np.arange(len(chosen))
        named = _ranges(t.ptr[chosen], t.length[chosen])
        named = named[t.keep[named]]
        named = named[np.lexsort((a.name_rank[t.kid[named]], -t.terms[named],
                                  place[t.pair[named]]))]
        counts = np.bincount(place[t.pair[named]], minlength=len(chosen)).tolist()
        shared = [a.names[j] for j in t.kid[named].tolist()]
        at = 0
        for p, q, s, m in zip(block[c_row][chosen].tolist(), c_other[chosen].tolist(),
                              score[chosen].tolist(), counts, strict=True):
            out[pids[p]].append((pids[q], s, shared[at:at + m]))
            at += m
    return out


@dataclass(frozen=True)
class _Arrays:
    """The index as arrays: features by number (``kid``), each feature's papers (``post_*``,
    CSR in corpus order) and each paper's features (``feat_*``, CSR) with, among them, which
    is broader than which (``bro_*``, columns into the paper's features)."""

    n_keys: int
    n_papers: int
    weight: object
    names: list[str]
    name_rank: object  # feature -> rank by (name, key): related()'s order of shared names
    id_rank: object  # paper -> rank by id: related()'s tie break
    post_len: object
    post_ptr: object
    post_paper: object
    post_factor: object
    post_inherited: object
    code: object  # paper * n_keys + feature of every posting, sorted
    by_code: object  # the posting of each code
    feat_kid: object
    feat_factor: object
    feat_inherited: object
    feat_len: object
    feat_ptr: object
    bro_from: object
    bro_to: object
    bro_len: object
    bro_ptr: object


def _arrays(index: AnalysisIndex, pids: list[str], keys: list[str]) -> _Arrays:
    import numpy as np

    row_of = {pid: i for i, pid in enumerate(pids)}
    kid = {k: j for j, k in enumerate(keys)}
    names = [index.info[k][0] for k in keys]
    post_len = np.array([len(index.factors[k]) for k in keys], dtype=np.intp)
    post_paper = np.array([row_of[p] for k in keys for p, _ in index.factors[k]],
                          dtype=np.intp)
    code = post_paper * len(keys) + np.repeat(np.arange(len(keys)), post_len)
    by_code = np.argsort(code, kind="stable")
    f_kid, f_factor, f_inherited, f_len, b_from, b_to, b_len = _paper_features(index, pids, kid)
    return _Arrays(
        n_keys=len(keys), n_papers=len(pids),
        weight=np.array([index.weight(k) for k in keys]), names=names,
        name_rank=_rank(sorted(range(len(keys)), key=lambda j: (names[j].casefold(), keys[j]))),
        id_rank=_rank(sorted(range(len(pids)), key=pids.__getitem__)),
        post_len=post_len, post_ptr=np.concatenate([[0], np.cumsum(post_len)]),
        post_paper=post_paper,
        post_factor=np.array([f for k in keys for _, f in index.factors[k]]),
        post_inherited=np.array([bool(index.features[p][k].via) for k in keys
                                 for p, _ in index.factors[k]], dtype=bool),
        code=code[by_code], by_code=by_code,
        feat_kid=np.array(f_kid, dtype=np.intp), feat_factor=np.array(f_factor),
        feat_inherited=np.array(f_inherited, dtype=bool),
        feat_len=np.array(f_len, dtype=np.intp),
        feat_ptr=np.concatenate([[0], np.cumsum(np.array(f_len, dtype=np.intp))]),
        bro_from=np.array(b_from, dtype=np.intp), bro_to=np.array(b_to, dtype=np.intp),
        bro_len=np.array(b_len, dtype=np.intp),
        bro_ptr=np.concatenate([[0], np.cumsum(np.array(b_len, dtype=np.intp))]))


def _paper_features(index: AnalysisIndex, pids: list[str], kid: dict[str, int]) -> tuple:
    """Each paper's features (number, factor, inherited; how many) and the broader-than pairs
    among them (from column, to column; how many), as flat lists."""
    f_kid: list[int] = []
    f_factor: list[float] = []
    f_inherited: list[bool] = []
    f_len: list[int] = []
    b_from: list[int] = []
    b_to: list[int] = []
    b_len: list[int] = []
    for pid in pids:
        own = [(k, f) for k, f in index.features[pid].items() if k in kid]
        col = {k: c for c, (k, _) in enumerate(own)}
        f_len.append(len(own))
        b_len.append(0)
        for c, (k, f) in enumerate(own):
            f_kid.append(kid[k])
            f_factor.append(f.factor)
            f_inherited.append(bool(f.via))
            for b in sorted(index.broader.get(k, frozenset()) & col.keys()):
                b_from.append(c)
                b_to.append(col[b])
                b_len[-1] += 1
    return f_kid, f_factor, f_inherited, f_len, b_from, b_to, b_len


def _candidates(a: _Arrays, block, n: int):
    """The (row in block, other paper) pairs that may rank: bounds for every cell, over every
    shared feature; a pair whose upper bound is below its row's n-th lower bound cannot."""
    import numpy as np

    size, n_papers = len(block), a.n_papers
    slots = _ranges(a.feat_ptr[block], a.feat_len[block])
    slot_kid = a.feat_kid[slots]
    ent = _ranges(a.post_ptr[slot_kid], a.post_len[slot_kid])
    ent_slot = np.repeat(np.arange(len(slots)), a.post_len[slot_kid])
    value = (np.minimum(a.post_factor[ent], a.feat_factor[slots][ent_slot])
             * a.weight[slot_kid][ent_slot])
    cell = np.repeat(np.arange(size), a.feat_len[block])[ent_slot] * n_papers + a.post_paper[ent]
    direct = ~(a.post_inherited[ent] | a.feat_inherited[slots][ent_slot])
    upper = np.bincount(cell, value, size * n_papers)
    lower = np.bincount(cell[direct], value[direct], size * n_papers)
    itself = np.arange(size) * n_papers + block
    upper[itself] = lower[itself] = 0.0
    hit = np.flatnonzero(lower > 0)
    floor = _nth_largest(hit // n_papers, lower[hit], size, n)
    cand = np.flatnonzero((upper.reshape(size, n_papers) > 0)
                          & (upper.reshape(size, n_papers) >= (floor - _TOL)[:, None]))
    return np.divmod(cand, n_papers)


@dataclass(frozen=True)
class _Terms:
    """Exact terms per candidate pair and feature of its paper (one row per term)."""

    length: object  # terms of each pair
    ptr: object
    pair: object  # each term's pair
    kid: object  # each term's feature
    keep: object  # shared, and not an inherited concept broader than another shared one
    terms: object  # the term's weight (0 where not kept)


def _terms(a: _Arrays, c_paper, c_other) -> _Terms:
    """Each pair scored as ``_shared_between`` scores it: an inherited concept (in either
    paper) broader than another shared feature is dropped."""
    import numpy as np

    t_len = a.feat_len[c_paper]
    t_ptr = np.concatenate([[0], np.cumsum(t_len)])
    t_slot = _ranges(a.feat_ptr[c_paper], t_len)
    t_pair = np.repeat(np.arange(len(c_paper)), t_len)
    t_kid = a.feat_kid[t_slot]
    wanted = c_other[t_pair] * a.n_keys + t_kid
    at = np.minimum(np.searchsorted(a.code, wanted), len(a.code) - 1)
    common = a.code[at] == wanted
    entry = a.by_code[at]
    pairs = _ranges(a.bro_ptr[c_paper], a.bro_len[c_paper])
    p_pair = np.repeat(np.arange(len(c_paper)), a.bro_len[c_paper])
    covered = np.bincount(t_ptr[p_pair] + a.bro_to[pairs],
                          common[t_ptr[p_pair] + a.bro_from[pairs]], len(t_pair)) > 0
    inherited = (common & a.post_inherited[entry]) | a.feat_inherited[t_slot]
    keep = common & ~(covered & inherited)
    terms = np.where(keep, np.minimum(np.where(common, a.post_factor[entry], 0.0),
                                      a.feat_factor[t_slot]) * a.weight[t_kid], 0.0)
    return _Terms(t_len, t_ptr, t_pair, t_kid, keep, terms)


def _top(a: _Arrays, t: _Terms, c_row, c_other, size: int, n: int):
    """The pairs that rank in each row's first ``n`` (rows in order, best first, ties by
    paper id) and every pair's score."""
    import numpy as np

    score = np.bincount(t.pair, t.terms, len(c_row))
    hit = np.flatnonzero(score > 0)
    nth = _nth_largest(c_row[hit], score[hit], size, n)
    near = (score > 0) & (score >= nth[c_row] - _TOL)
    # related() sums a pair's weights largest first; one or two terms sum alike in any
    # order, more are summed again that way so near-ties break as there.
    for c in np.flatnonzero(near & (np.bincount(t.pair, t.keep, len(c_row)) > 2)):
        values = t.terms[t.ptr[c]:t.ptr[c + 1]]
        score[c] = sum(sorted(values[values > 0].tolist(), reverse=True))
    chosen = np.flatnonzero(near & (score > 1e-12))
    chosen = chosen[np.lexsort((a.id_rank[c_other[chosen]], -score[chosen], c_row[chosen]))]
    group = c_row[chosen]
    return chosen[np.arange(len(chosen)) - np.searchsorted(group, group) < n], score


def _rank(order: list[int]):
    """The inverse permutation: rank[order[i]] = i."""
    import numpy as np

    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return rank


def _ranges(starts, counts):
    """The ranges [start, start + count) one after another, as one index array.

    >>> _ranges([5, 0], [2, 3]).tolist()
    [5, 6, 0, 1, 2]
    """
    import numpy as np

    counts = np.asarray(counts, dtype=np.intp)
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    return np.repeat(np.asarray(starts, dtype=np.intp) - ends + counts, counts) + np.arange(total)


def _nth_largest(group, values, groups: int, n: int):
    """Per group 0..groups-1, the n-th largest of its ``values`` (0.0 when it has fewer).

    >>> import numpy as np
    >>> _nth_largest(np.array([0, 0, 1, 0]), np.array([3.0, 1.0, 5.0, 2.0]), 2, 2).tolist()
    [2.0, 0.0]
    """
    import numpy as np

    order = np.lexsort((-values, group))
    group, values = group[order], values[order]
    first = np.searchsorted(group, np.arange(groups))
    enough = np.searchsorted(group, np.arange(groups), side="right") - first >= n
    out = np.zeros(groups)
    out[enough] = values[first[enough] + n - 1]
    return out


