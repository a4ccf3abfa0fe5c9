"""kg installed from its wheel (not the checkout) finds its shipped data: vocabulary, queries."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv holding only kg's wheel; kg's dependencies come from the test venv."""
    tmp = tmp_path_factory.mktemp("install")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp / "dist"), str(ROOT)], check=True, capture_output=True)
    (wheel,) = (tmp / "dist").glob("kg-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", str(wheel)], check=True, capture_output=True)
    # Dependencies from the test venv. A path in a .pth is not a site dir, so the editable
    # install's own .pth (which points at this checkout) is not read there.
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    Path(site.stdout.strip(), "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    where = subprocess.run([str(python), "-c", "import kg; print(kg.__file__)"], cwd=tmp,
                           capture_output=True, text=True, check=True)
    assert where.stdout.startswith(str(venv)), where.stdout  # not the checkout
    return venv


def _kg(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "kg"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_installed_kg_cypher_finds_a_saved_query_by_name(installed, tmp_path):
    assert _kg(installed, "cypher", "--help", cwd=tmp_path).returncode == 0
    # Port 1 refuses connections: reaching the connection means the saved query was found.
    out = _kg(installed, "cypher", "papers-sharing-technique", "--param",
              "technique=quantization", "--uri", "bolt://127.0.0.1:1", cwd=tmp_path)
    assert "no such file or saved query" not in out.stderr
    assert out.returncode == 6, out.stderr


def test_installed_kg_reads_its_vocabulary_and_saved_sparql(installed, tmp_path):
    paper = tmp_path / "paper.txt"
    paper.write_text("We apply knowledge distillation to ResNet-50 on ImageNet.\n")
    out = _kg(installed, "extract", str(paper), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "knowledge distillation" in out.stdout and "ImageNet" in out.stdout
    code = "from kg.data import data_dir; d = data_dir('sparql'); print(d, len([*d.glob('*.rq')]))"
    found = subprocess.run([str(installed / "bin" / "python"), "-c", code], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout.split()
    assert Path(found[0]).is_relative_to(installed.resolve())  # the wheel's copy, not the repo
    assert found[0].endswith("kg/_data/sparql") and int(found[1]) > 0


def test_installed_kg_sparql_runs_a_saved_query_by_name(installed, tmp_path):
    paper = tmp_path / "paper.txt"
    paper.write_text("We apply knowledge distillation to ResNet-50 on ImageNet.\n")
    built = _kg(installed, "build", str(paper), "-o", str(tmp_path / "out"), "--no-html",
                cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    out = _kg(installed, "sparql", "techniques-by-paper-count", "--graph",
              str(tmp_path / "out"), "--format", "csv", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "knowledge distillation" in out.stdout
