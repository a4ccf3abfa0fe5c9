"""Readers of the corpora researchers have (arXiv, OpenAlex, S2, OpenReview, BibTeX, CSL, RIS),
filters while reading, and reading that stays bounded and streaming whatever the input."""

from __future__ import annotations

import bz2
import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import zstandard

from kg.errors import InputError
from kg.ingest import IngestOptions, PaperFilter, Tally, read_inputs, read_source, stream_papers

FORMATS = Path(__file__).parent / "data" / "formats"
ROOT = Path(__file__).parent.parent
ARXIV = FORMATS / "arxiv-snapshot-head5.json"


@pytest.fixture
def formats_dir(corpora_dir) -> Path:
    found = corpora_dir / "formats"
    if not found.is_dir():
        pytest.skip("../shared/corpora/formats is not here")
    return found


def _kg(*args: str, stdin: bytes | None = None, timeout: float = 120
        ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg", *args], input=stdin, capture_output=True,
                          cwd=ROOT, timeout=timeout)


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- formats, sniffed from the content ---------------------------------------------------


def test_arxiv_snapshot_named_json_is_sniffed_as_lines_and_mapped(formats_dir):
    snapshot = formats_dir / "arxiv-snapshot" / "arxiv-metadata-oai-snapshot.head200.json"
    result = read_source(snapshot)
    assert (len(result.papers), result.skipped) == (200, ())
    first = result.papers[0]
    assert first.id == "0704.0001" and first.url == "https://arxiv.org/abs/0704.0001"
    assert first.authors[0] == "C. Balázs"  # authors_parsed, LaTeX accent decoded
    assert (first.date, first.year, first.categories) == ("2007-04-02", 2007, ("hep-ph",))
    assert first.links == ("https://doi.org/10.1103/PhysRevD.76.013009",)
    assert first.venue == "Phys.Rev.D76:013009,2007"  # journal-ref
    assert first.title.startswith("Calculation of prompt diphoton production cross sections at")
    assert result.papers[1].categories == ("math.CO", "cs.CG")


def test_openalex_list_and_single_work_shapes_rebuild_the_abstract(formats_dir):
    folder = formats_dir / "openalex-works"
    (work,) = read_source(folder / "works-filter-title-search-paperqa.json").papers
    assert work.id == "W4389761608" and work.url == "https://doi.org/10.48550/arxiv.2312.07559"
    assert work.links == ("https://openalex.org/W4389761608",)
    assert work.abstract.startswith("Large Language Models (LLMs) generalize well across")
    assert (work.year, work.date, work.venue) == (2023, "2023-01-01", "arXiv (Cornell University)")
    assert "Topic Modeling" in work.categories and work.authors[0] == "Jakub Lála"
    (single,) = read_source(folder / "work-by-doi-10.1073_pnas.1414271111.json").papers
    assert single.venue == "Proceedings of the National Academy of Sciences"
    assert len(read_source(folder / "works-filter-title-search-chemcrow.json").papers) == 2


def test_openalex_work_with_a_null_abstract_is_skipped_and_counted(formats_dir):
    work = formats_dir / "openalex-works" / "work-by-doi-10.1016_j.xgen.2025.100814.json"
    result = read_source(work)
    assert result.papers == () and "no 'abstract' text" in result.skipped[0].reason


def test_openalex_inverted_index_with_gaps_keeps_the_words_in_order(tmp_path):
    work = {"id": "https://openalex.org/W1", "display_name": "T",
            "abstract_inverted_index": {"study": [1], "We": [0], "X": [5], "and": [3]}}
    (paper,) = read_source(_jsonl(tmp_path / "w.jsonl", [work])).papers
    assert paper.abstract == "We study and X"


def test_semantic_scholar_batch_skips_nulls_and_reads_the_papers(formats_dir):
    result = read_source(formats_dir / "semantic-scholar-graph-api"
                         / "paper-batch-full-fields.json")
    assert len(result.papers) == 3
    assert "the API found no paper" in result.skipped[0].reason
    first = result.papers[0]
    assert first.id == "CorpusId:470667" and first.links == ("https://doi.org/10.2139/ssrn.288970",)
    assert first.authors[0] == "Marianne Bertrand" and "Economics" in first.categories


def test_semantic_scholar_search_match_shape_is_read_and_its_missing_abstract_counted(formats_dir):
    result = read_source(formats_dir / "semantic-scholar-graph-api"
                         / "paper-search-match-paperqa.json")
    assert result.papers == () and len(result.skipped) == 1
    assert "read as s2 records" in result.notices[0]


def test_s2ag_bulk_lines_follow_the_datasets_docs():
    result = read_source(FORMATS / "s2ag-bulk.jsonl")
    (paper,) = result.papers
    assert paper.id == "CorpusId:258865512" and paper.date == "2023-05-23"
    assert paper.links == ("https://doi.org/10.48550/arXiv.2305.14314",
                           "https://arxiv.org/abs/2305.14314")
    assert paper.categories == ("Computer Science",)
    assert result.skipped[0].source.endswith("s2ag-bulk.jsonl:2")  # a papers line, no abstract


def test_openreview_v2_notes_take_content_values_and_the_date_from_milliseconds():
    result = read_source(FORMATS / "openreview-v2-notes.json")
    (paper,) = result.papers
    assert paper.title == "Learning to Cache Attention for Faster Diffusion"
    assert paper.authors == ("Ada Lovelace", "Alan Turing")
    assert (paper.venue, paper.year, paper.date) == ("ICLR 2024 poster", 2024, "2024-01-11")
    assert paper.url == "https://openreview.net/forum?id=aVh9KRZdRk"
    assert result.skipped[0].source.endswith("record 2")


def test_bibtex_decodes_latex_accents_and_a_broken_entry_costs_only_itself():
    result = read_source(FORMATS / "accents.bib")
    first, after = result.papers
    assert first.title == "Schöne Transformers: Attention for Été"
    assert first.authors == ("Jörg Müller", "Carmen García-Peña", "Søren Østergaard")
    assert first.venue == "Advances in Neural Information Processing Systems"  # @string macro
    assert first.abstract == "We study naïve attention caching and show a 2× speed-up on ImageNet."
    assert first.url == "https://arxiv.org/abs/2305.14314"
    assert after.id == "fine2021" and after.url == "https://doi.org/10.1000/example"
    (skip,) = result.skipped
    assert skip.source.endswith("accents.bib:15") and "BibTeX entry" in skip.reason


def test_real_bibtex_library_gives_every_entry_with_an_abstract(formats_dir):
    result = read_source(formats_dir / "bibtex-abstracts" / "papers3-library-head.bib")
    assert len(result.papers) == 220  # 224 with abstract, minus 4 broken entries (skipped)
    broken = [s for s in result.skipped if "BibTeX entry" in s.reason]
    assert len(result.papers) + len(result.skipped) == 707 and len(broken) == 5
    assert ("Ralf Dörner" in {a for p in result.papers for a in p.authors}
            or all("\\" not in a for p in result.papers for a in p.authors))


def test_csl_json_and_ris_map_authors_dates_and_abstracts():
    (csl,) = read_source(FORMATS / "items.csl.json").papers
    assert csl.authors == ("Tim Dettmers", "The QLoRA Team") and csl.date == "2023-05-23"
    assert csl.keywords == ("quantization", "low-rank adaptation")
    ris = read_source(FORMATS / "references.ris")
    assert [p.id for p in ris.papers] == ["dettmers2023", "vaswani2017"]
    assert ris.papers[0].date == "2023-05-23" and ris.papers[0].authors[0] == "Tim Dettmers"
    assert ris.papers[1].abstract.startswith("We propose the Transformer")  # N2
    assert len(ris.skipped) == 1


def test_a_forced_input_format_maps_records_the_sniffer_would_leave_generic(tmp_path):
    # An OpenAlex work whose id is not an openalex.org URL and has a plain abstract.
    path = _jsonl(tmp_path / "w.jsonl", [{"id": "W9", "display_name": "T", "abstract": "A.",
                                         "publication_year": 2021}])
    assert read_source(path).papers[0].title is None  # generic: no "title" key
    (paper,) = read_source(path, IngestOptions(format="openalex")).papers
    assert (paper.title, paper.year) == ("T", 2021)


# --- compression, bad bytes, bounded reading -----------------------------------------------


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress,
                                      lambda b: zstandard.ZstdCompressor().compress(b)],
                         ids=["gzip", "bzip2", "zstd"])
def test_compressed_inputs_read_like_the_plain_file(tmp_path, compress):
    path = tmp_path / "snapshot"  # no suffix: the magic bytes decide
    path.write_bytes(compress(ARXIV.read_bytes()))
    def fields(papers):
        return [(p.id, p.title, p.abstract, p.date, p.categories) for p in papers]

    assert fields(read_source(path).papers) == fields(read_source(ARXIV).papers)
    assert len(read_source(path).papers) == 5


@pytest.mark.parametrize("compress", [gzip.compress,
                                      lambda b: zstandard.ZstdCompressor().compress(b)],
                         ids=["gzip", "zstd"])
def test_truncated_compressed_file_names_file_and_record_and_keeps_the_records_before(
        tmp_path, compress):
    # (bzip2 decompresses whole 900 kB blocks: a cut loses its block, reported the same way.)
    data = compress(b"".join(json.dumps({"id": f"r{i}", "abstract": f"We study {i} " * 40})
                                  .encode() + b"\n" for i in range(3000)))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    result = read_inputs([path])
    assert 0 < len(result.papers) < 3000
    (skip,) = result.skipped
    assert skip.source == str(path) and "rest of file skipped" in skip.reason
    assert f"{path}:{len(result.papers) + 1}" in skip.reason and "ends early" in skip.reason


def test_an_over_long_line_is_skipped_and_the_next_line_read(tmp_path):
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"id": "a", "abstract": "We study X."}\n{"abstract": "' + b"x" * 5000
                     + b'"}\n{"id": "c", "abstract": "We study Z."}\n')
    result = read_source(path, IngestOptions(max_record_bytes=1000))
    assert [p.id for p in result.papers] == ["a", "c"]
    (skip,) = result.skipped
    assert skip.source == f"{path}:2" and "over 1,000 bytes" in skip.reason


def test_dev_zero_is_refused_with_a_message_not_read_forever():
    out = _kg("extract", "/dev/zero", "--workers", "1", timeout=120)  # hung (and grew) before
    assert out.returncode != 0
    err = out.stderr.decode()
    assert "/dev/zero:1: NUL bytes" in err and "Traceback" not in err


def test_nul_filled_stdin_names_the_record_without_a_traceback():
    out = _kg("extract", "-", "--workers", "1", stdin=b"\0" * 200_000)
    assert out.returncode != 0
    err = out.stderr.decode()
    assert "<stdin>:1" in err and "NUL" in err and "Traceback" not in err


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_one_invalid_byte_skips_its_record_not_the_file(tmp_path, fmt):
    if fmt == "jsonl":
        body = (b'{"id": "a", "abstract": "We study X."}\n'
                b'{"id": "b", "title": "Bad \xff", "abstract": "We study Y."}\n'
                b'{"id": "c", "abstract": "We study Z."}\n')
    else:
        body = (b"id,title,abstract\na,One,We study X.\nb,Bad \xff,We study Y.\n"
                b"c,Three,We study Z.\n")
    path = tmp_path / f"mixed.{fmt}"
    path.write_bytes(body)
    result = read_source(path)
    assert [p.id for p in result.papers] == ["a", "c"]
    (skip,) = result.skipped
    assert skip.source == f"{path}:{2 if fmt == 'jsonl' else 3}" and "0xff" in skip.reason


def test_json_nested_ten_thousand_deep_is_a_skip_naming_the_record(tmp_path):
    deep = "[" * 10_000 + "]" * 10_000
    lines = _jsonl(tmp_path / "deep.jsonl", [{"id": "a", "abstract": "We study X."}])
    lines.write_text(lines.read_text() + '{"id": "b", "abstract": ' + deep + "}\n")
    result = read_source(lines)
    assert [p.id for p in result.papers] == ["a"]
    assert result.skipped[0].source == f"{lines}:2"
    assert "nested too deep" in result.skipped[0].reason
    array = tmp_path / "deep.json"
    array.write_text('[{"id": "a", "abstract": "We study X."}, {"id": "b", "title": ' + deep
                     + ', "abstract": "We study Y."}]')
    result = read_source(array)
    assert [p.id for p in result.papers] == ["a"]
    assert result.skipped[0].source == f"{array}:record 2"
    out = _kg("extract", str(lines), "--workers", "1")
    assert out.returncode == 0 and "Traceback" not in out.stderr.decode()


def test_a_json_array_with_a_broken_tail_keeps_the_records_before_it(tmp_path):
    path = tmp_path / "papers.json"
    path.write_text('[{"id": "a", "abstract": "We study X."}, {"id": "b", "abstract": "We stu')
    result = read_inputs([path])
    assert [p.id for p in result.papers] == ["a"]
    assert "rest of file skipped" in result.skipped[0].reason
    assert f"{path}:record 2" in result.skipped[0].reason


def _feed_fifo(path: Path, data: bytes, wait: threading.Event | None = None) -> threading.Thread:
    def write():
        with open(path, "wb") as fh:
            half = len(data) // 2
            fh.write(data[:half])
            fh.flush()
            if wait is not None:
                wait.wait(timeout=60)
            fh.write(data[half:])

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_fifo_is_opened_once_and_streamed(tmp_path):
    fifo = tmp_path / "papers.fifo"
    os.mkfifo(fifo)
    first_seen = threading.Event()
    records = [{"id": f"f{i}", "abstract": f"We study {i}."} for i in range(200)]
    _feed_fifo(fifo, "".join(json.dumps(r) + "\n" for r in records).encode(), first_seen)
    papers = stream_papers([fifo])
    # The first paper arrives while the writer still holds back the second half.
    assert next(papers).id == "f0"
    first_seen.set()
    assert len(list(papers)) == 199


def test_kg_build_reads_a_fifo_without_hanging(tmp_path):
    fifo = tmp_path / "seed.fifo"
    os.mkfifo(fifo)
    _feed_fifo(fifo, (ROOT / "examples" / "iclr2025-seed.txt").read_bytes())
    out = _kg("build", str(fifo), "-o", str(tmp_path / "out"), "--workers", "1", timeout=120)
    assert out.returncode == 0, out.stderr.decode()
    assert "papers: 19" in out.stdout.decode()


# --- filters while reading -------------------------------------------------------------------


def _filtered(tmp_path, **kwargs):
    records = [
        {"id": "a", "abstract": "A.", "categories": ["cs.LG", "cs.AI"], "venue": "ICLR 2024",
         "date": "2024-05-01"},
        {"id": "b", "abstract": "B.", "categories": ["cs.LGX"], "venue": "iclr 2023",
         "year": 2023},
        {"id": "c", "abstract": "C.", "categories": ["cs.LG"], "venue": "ICML 2022",
         "date": "2022-07"},
        {"id": "d", "abstract": "D.", "categories": ["cs.LG"], "venue": "ICLR"},
    ]
    path = _jsonl(tmp_path / "f.jsonl", records)
    opts = IngestOptions(where=PaperFilter.parse(**kwargs.pop("filters", {})), **kwargs)
    return read_inputs([path], opts)


def test_where_category_is_exact_on_any_item_and_venue_tilde_is_a_substring(tmp_path):
    result = _filtered(tmp_path, filters={"where": ("category=cs.LG",)})
    assert [p.id for p in result.papers] == ["a", "c", "d"]  # not cs.LGX
    result = _filtered(tmp_path, filters={"where": ("category=cs.LG", "venue~iclr")})
    assert [p.id for p in result.papers] == ["a", "d"]
    assert result.filtered == (("category=cs.LG", 1), ("venue~iclr", 1))
    assert result.skipped == ()  # filtered out is not skipped
    assert "filtered out 2 record(s)" in result.notices[-1]


def test_since_and_until_take_years_or_dates_and_drop_undated_papers_counted(tmp_path):
    result = _filtered(tmp_path, filters={"since": "2023"})
    assert [p.id for p in result.papers] == ["a", "b"]
    assert dict(result.filtered) == {"before --since 2023": 1, "no date (--since/--until)": 1}
    result = _filtered(tmp_path, filters={"since": "2022-07", "until": "2023-12-31"})
    assert [p.id for p in result.papers] == ["b", "c"]


def test_limit_stops_reading_after_n_kept_papers(tmp_path):
    path = tmp_path / "tail.jsonl"
    path.write_text('{"id": "a", "abstract": "A."}\n{"id": "b", "abstract": "B."}\nnot json\n')
    result = read_inputs([path, tmp_path / "missing.jsonl"], IngestOptions(limit=2))
    assert [p.id for p in result.papers] == ["a", "b"]
    assert result.skipped == ()  # neither the bad line nor the missing file was read


def test_a_bad_where_or_date_is_a_one_line_message_and_exit_2():
    out = _kg("extract", str(ARXIV), "--where", "colour=red")
    assert out.returncode == 2 and "--where 'colour=red': write FIELD=VALUE" in out.stderr.decode()
    out = _kg("extract", str(ARXIV), "--since", "last year")
    assert out.returncode == 2 and "--since 'last year'" in out.stderr.decode()


def test_cli_filters_report_what_they_dropped(tmp_path):
    out = _kg("extract", str(ARXIV), "--where", "category=math.CO", "--workers", "1")
    assert out.returncode == 0, out.stderr.decode()
    assert "2 papers" in out.stdout.decode()  # 0704.0002 (math.CO cs.CG) and 0704.0004
    assert "filtered out 3 record(s): 3 category=math.CO" in out.stderr.decode()


def test_stream_tally_counts_skips_and_filters_as_it_goes(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"id": "a", "abstract": "A.", "year": 2020}\n{"id": "b"}\n'
                    '{"id": "c", "abstract": "C.", "year": 2024}\n')
    tally = Tally()
    opts = IngestOptions(where=PaperFilter.parse(since="2021"))
    assert [p.id for p in stream_papers([path], opts, tally)] == ["c"]
    assert (tally.kept, len(tally.skipped), sum(tally.filtered.values())) == (1, 1, 1)


def test_unknown_input_format_lists_the_new_ones():
    with pytest.raises(InputError, match="arxiv, openalex, s2, openreview, bibtex, csl, ris"):
        IngestOptions(format="mods")


def test_filters_on_rebuilt_fields_see_the_paper_not_the_raw_line():
    # The raw line has "Bal\\'azs" in authors_parsed; the paper has "C. Balázs". Lines are only
    # turned away unparsed on fields copied verbatim (category, venue, keyword).
    opts = IngestOptions(where=PaperFilter.parse(("author=C. Balázs", "category~HEP-PH")))
    assert [p.id for p in read_source(ARXIV, opts).papers] == ["0704.0001"]
    opts = IngestOptions(where=PaperFilter.parse(("url=https://arxiv.org/abs/0704.0002",)))
    assert [p.id for p in read_source(ARXIV, opts).papers] == ["0704.0002"]


def test_utf16_is_read_by_its_byte_order_mark_or_encoding_and_named_without_either(tmp_path):
    text = "id\tabstract\nu1\tCafé in UTF-16.\n"
    path = tmp_path / "u16.tsv"
    path.write_bytes(text.encode("utf-16"))  # with a byte-order mark
    assert read_source(path).papers[0].abstract == "Café in UTF-16."
    path.write_bytes(text.encode("utf-16-le"))  # without
    (paper,) = read_source(path, IngestOptions(encoding="utf-16-le")).papers
    assert paper.abstract == "Café in UTF-16."
    with pytest.raises(InputError, match=r"u16.tsv:1: .*NUL byte.*--encoding utf-16"):
        read_source(path)


def test_a_quote_never_closed_stops_at_the_record_limit_and_the_rest_is_read(tmp_path):
    path = tmp_path / "runon.csv"
    rows = "".join(f"r{i},We study {i}.\n" for i in range(200))
    path.write_text(f'id,abstract\nbad,"We never close this quote.\n{rows}', encoding="utf-8")
    result = read_source(path, IngestOptions(max_record_bytes=500))
    assert len(result.papers) == 200
    (skip,) = result.skipped
    assert skip.source == f"{path}:2" and "runs on past 500 characters" in skip.reason


def test_a_malformed_first_line_of_a_jsonl_file_costs_only_that_line(tmp_path):
    path = tmp_path / "bad-first.jsonl"
    path.write_text('{"id": "a", "abstract": "We st\n{"id": "b", "abstract": "We study Y."}\n')
    result = read_source(path)
    assert [p.id for p in result.papers] == ["b"]
    assert result.skipped[0].source == f"{path}:1"
