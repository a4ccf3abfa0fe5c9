"""Ingest: every input format, and every kind of bad input, on real files in tests/data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kg.errors import InputError
from kg.ingest import IngestOptions, content_id, read_inputs, read_source

DATA = Path(__file__).parent / "data" / "inputs"
SEED = Path(__file__).parent.parent / "examples" / "iclr2025-seed.txt"


def test_seed_text_file_yields_nineteen_untitled_papers_without_the_header():
    result = read_source(SEED)
    assert len(result.papers) == 19
    assert all(p.title is None for p in result.papers)
    assert not any(p.abstract.startswith("ICLR 2025 Papers") for p in result.papers)
    assert result.papers[1].abstract.startswith("Not yet. We present SPACE")


def test_untitled_papers_get_content_hash_ids_that_ignore_layout():
    papers = read_source(SEED).papers
    assert papers[0].id == content_id(papers[0].abstract)
    assert content_id("a  b\nc") == content_id("a b c")
    assert len({p.id for p in papers}) == 19


def test_jsonl_keeps_given_ids_and_optional_fields():
    papers = read_source(DATA / "papers.jsonl").papers
    assert [p.id for p in papers] == ["p1", "p2"]
    first = papers[0]
    assert first.authors == ("A. Author", "B. Author")
    assert (first.venue, first.year, first.url) == ("ICLR 2025", 2025, "https://example.org/p1")
    assert first.text.startswith("Fast Caching for Diffusion\nWe propose")


def test_json_array_splits_semicolon_separated_authors():
    papers = read_source(DATA / "papers.json").papers
    assert [p.id for p in papers] == ["j1", "j2"]
    assert papers[1].authors == ("X", "Y")


def test_csv_columns_are_configurable():
    opts = IngestOptions(id_field="paper_id", title_field="name", abstract_field="summary")
    papers = read_source(DATA / "papers.csv", opts).papers
    assert [(p.id, p.title) for p in papers] == [("c1", "First"), ("c2", "Second")]
    assert papers[0].abstract == "We use knowledge distillation, with a comma."


def test_tsv_with_header_row():
    (paper,) = read_source(DATA / "papers.tsv").papers
    assert (paper.id, paper.title) == ("t1", "One")


def test_headerless_openreview_tsv_is_read_with_its_known_layout(tmp_path):
    row = "\t".join(["Title X", "A;B", "k1;k2", "area", "ICLR 2024 poster", "pdf", "", "tldr",
                     "We study caching."])
    path = tmp_path / "iclr.tsv"
    path.write_text(row + "\n")
    result = read_source(path)
    (paper,) = result.papers
    assert (paper.title, paper.keywords, paper.year) == ("Title X", ("k1", "k2"), 2024)
    assert "OpenReview" in result.notices[0]


def test_bad_records_are_skipped_counted_and_named_while_good_ones_survive():
    result = read_inputs([DATA / "bad.jsonl"])
    assert [p.id for p in result.papers] == ["ok1", "ok2"]
    reasons = {s.source: s.reason for s in result.skipped}
    assert len(reasons) == 3
    assert "duplicate id 'ok1'" in reasons[f"{DATA / 'bad.jsonl'}:2"]
    assert "no 'abstract'" in reasons[f"{DATA / 'bad.jsonl'}:3"]
    assert "malformed JSON" in reasons[f"{DATA / 'bad.jsonl'}:4"]


def test_csv_without_abstract_column_names_the_columns_and_the_fix():
    with pytest.raises(InputError, match=r"no 'abstract' column \(columns: id, title\); pass "
                                         r"--abstract-field"):
        read_source(DATA / "no-abstract-column.csv")


def test_wrong_encoding_skips_the_record_naming_file_line_and_fix():
    (skip,) = read_source(DATA / "latin1.tsv").skipped
    assert skip.source.endswith("latin1.tsv:2")
    assert "not valid utf-8-sig (byte 0xe9" in skip.reason and "iconv" in skip.reason
    (paper,) = read_source(DATA / "latin1.tsv", IngestOptions(encoding="latin-1")).papers
    assert paper.abstract == "Café latin-1 text."


def test_unreadable_file_is_a_skip_not_a_crash():
    result = read_inputs([DATA / "missing.jsonl", DATA / "papers.tsv"])
    assert [p.id for p in result.papers] == ["t1"]
    assert "no such file" in result.skipped[0].reason


def test_stdin_is_read_when_the_input_is_a_dash():
    code = ("from kg.ingest import read_source; r = read_source('-'); "
            "print([p.id for p in r.papers])")
    out = subprocess.run([sys.executable, "-c", code], input=b'{"id": "s1", "abstract": "x"}\n',
                         capture_output=True, check=True)
    assert out.stdout.decode().strip() == "['s1']"


def _kg(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kg", *args], input=stdin, capture_output=True,
                          cwd=Path(__file__).parent.parent)


def test_unknown_encoding_is_a_one_line_message_and_exit_2():
    out = _kg("extract", str(DATA / "papers.tsv"), "--encoding", "utf-9")
    assert out.returncode == 2
    assert out.stderr.decode().strip() == (
        "Error: unknown encoding 'utf-9'; use a Python codec name such as utf-8, utf-8-sig, "
        "latin-1 or cp1252")


def test_unknown_encoding_is_refused_before_any_file_is_read():
    with pytest.raises(InputError, match="unknown encoding 'nope'"):
        IngestOptions(encoding="nope")


def test_headerless_openreview_tsv_piped_on_stdin_is_read_as_tsv(corpora_dir):
    tsv = (corpora_dir / "openreview-2024" / "CoRL_2024_Conference.tsv").read_bytes()
    rows = len([line for line in tsv.splitlines() if line.strip()])
    code = ("from kg.ingest import read_source; r = read_source('-'); "
            "print(len(r.papers), len(r.skipped))")
    out = subprocess.run([sys.executable, "-c", code], input=tsv, capture_output=True, check=True)
    assert out.stdout.decode().split() == [str(rows), "0"]


def test_csv_with_a_header_piped_on_stdin_is_read_as_csv():
    data = (DATA / "papers.csv").read_bytes().replace(b"summary", b"abstract")
    out = _kg("extract", "-", "--id-field", "paper_id", "--title-field", "name", stdin=data)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode().startswith("c1  First\n")
    assert "2 papers" in out.stdout.decode()


def test_prose_with_commas_and_an_indented_paragraph_on_stdin_stays_plain_text():
    text = b"We use X, Y and Z, and we study W.\n\n\tWe propose a method, V.\n"
    code = "from kg.ingest import read_source; print(len(read_source('-').papers))"
    out = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, check=True)
    assert out.stdout.decode().strip() == "2"


def test_an_unbalanced_quote_skips_its_line_and_keeps_the_records_it_swallowed(tmp_path):
    path = tmp_path / "quote.csv"
    path.write_text('id,abstract\na,"We study X.\nb,We study Y.\nc,We study Z.\n'
                    'd,"A quoted abstract\nover two lines."\n', encoding="utf-8")
    result = read_source(path)
    assert [(p.id, p.abstract) for p in result.papers] == [
        ("b", "We study Y."), ("c", "We study Z."), ("d", "A quoted abstract\nover two lines.")]
    (skip,) = result.skipped
    assert skip.source == f"{path}:2"
    assert "unbalanced quote" in skip.reason and "runs on to line 5" in skip.reason


def test_an_unbalanced_quote_closed_by_a_later_record_loses_only_its_own_line(tmp_path):
    path = tmp_path / "quote.csv"
    path.write_text('id,abstract\na,"We study X.\nb,We study Y.\nc,"We study Z."\n',
                    encoding="utf-8")
    result = read_source(path)
    assert [p.id for p in result.papers] == ["b", "c"]
    assert [s.source for s in result.skipped] == [f"{path}:2"]


def test_json_numbers_become_their_json_text_and_objects_or_lists_are_skipped(tmp_path):
    path = tmp_path / "typed.jsonl"
    path.write_text(
        '{"id": 12, "title": 3.0, "year": 2024.0, "abstract": "We study X."}\n'
        '{"id": 1.5, "title": "Real", "abstract": "We study W."}\n'
        '{"id": {"doi": "10.1/x"}, "abstract": "We study Y."}\n'
        '{"id": "z", "title": ["T"], "abstract": "We study Z."}\n'
        '{"id": true, "abstract": "We study V."}\n', encoding="utf-8")
    result = read_source(path)
    assert [(p.id, p.title, p.year) for p in result.papers] == [
        ("12", "3", 2024), ("1.5", "Real", None)]
    reasons = {s.source.rsplit(":", 1)[1]: s.reason for s in result.skipped}
    assert reasons == {"3": "'id' is a JSON object; give a string or a number",
                       "4": "'title' is a JSON list; give a string or a number",
                       "5": "'id' is a JSON boolean; give a string or a number"}


def test_csv_column_options_match_the_header_whatever_its_case():
    opts = IngestOptions(id_field="Paper_ID", title_field="NAME", abstract_field="Summary")
    papers = read_source(DATA / "papers.csv", opts).papers
    assert [(p.id, p.title) for p in papers] == [("c1", "First"), ("c2", "Second")]
