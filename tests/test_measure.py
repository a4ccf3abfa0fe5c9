"""scripts/measure on tiny packages written for each test (never on kg itself, whose
figures change with every refactor)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "measure"


def _package(tmp_path, files: dict[str, str]):
    """A package ``pkg`` in tmp_path with ``files`` (path under pkg/ → source)."""
    root = tmp_path / "pkg"
    for name, source in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    return root


def _measure(package, *args: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, str(SCRIPT), str(package), *args],
                          capture_output=True, text=True)
    assert done.stderr == ""
    return done.returncode, done.stdout


def _section(output: str, title: str) -> list[str]:
    """The status line of the measure titled ``title`` and the rows listed under it."""
    lines = output.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line[6:].startswith(title)]
    rows = []
    for line in lines[start + 1:]:
        if not line.startswith("        "):
            break
        rows.append(line.strip())
    return [lines[start], *rows]


def _function(name: str, body_lines: int) -> str:
    """A function whose ``def`` and body span ``1 + body_lines`` lines."""
    return f"def {name}(x):\n" + "".join(f"    x = x + {i}\n" for i in range(body_lines - 1)) \
        + "    return x\n"


def test_a_clean_package_passes_every_measure(tmp_path):
    pkg = _package(tmp_path, {"a.py": "from pkg.b import f\n\n\ndef g():\n    return f()\n",
                              "b.py": "def f():\n    return 1\n"})
    code, out = _measure(pkg)
    assert code == 0, out
    assert out.splitlines()[-1] == "every measure holds"
    assert "FAIL" not in out


def test_a_module_level_import_cycle_is_found_and_fails(tmp_path):
    pkg = _package(tmp_path, {"a.py": "import pkg.b\n", "b.py": "from pkg import a\n",
                              "c.py": "from . import a\n"})
    code, out = _measure(pkg)
    assert code == 1
    assert _section(out, "import cycles") == [
        "FAIL  import cycles (module-level imports): 1 (at most 0)",
        "2 modules, e.g. pkg.a → pkg.b → pkg.a"]


def test_a_relative_import_inside_a_subpackage_closes_a_cycle(tmp_path):
    pkg = _package(tmp_path, {"sub/__init__.py": "from .x import VALUE\n",
                              "sub/x.py": "from ..sub import y\nVALUE = 1\n",
                              "sub/y.py": "from pkg.sub import x\n"})
    code, out = _measure(pkg)
    assert code == 1
    assert _section(out, "import cycles")[1] == "2 modules, e.g. pkg.sub.x → pkg.sub.y → pkg.sub.x"


def test_an_import_inside_a_function_or_for_type_checking_only_is_not_a_cycle(tmp_path):
    pkg = _package(tmp_path, {
        "a.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    import pkg.b\n",
        "b.py": "import pkg.a\n\n\ndef f():\n    from pkg import c\n    return c\n",
        "c.py": "import pkg.b\n"})
    out = _measure(pkg, "--report")[1]
    assert _section(out, "import cycles")[0].startswith("ok    import cycles (module-level "
                                                       "imports): 0")
    assert _section(out, "more cycles, counting imports inside functions") == [
        "ok    more cycles, counting imports inside functions: 1 (not a threshold)",
        "2 modules, e.g. pkg.b → pkg.c → pkg.b"]


def test_private_names_imported_or_read_from_another_module_are_found(tmp_path):
    pkg = _package(tmp_path, {
        "a.py": "_SECRET = 1\n\n\ndef _helper():\n    return _SECRET\n",
        "b.py": "from pkg.a import _helper\n",
        "c.py": "import pkg.a\nfrom pkg import a as alias\n\n"
                "X = pkg.a._SECRET\nY = alias._SECRET\n",
        "d.py": "from pkg.a import __doc__\n\n\nclass K:\n    _own = 1\n\n"
                "    def f(self):\n        return self._own\n"})
    code, out = _measure(pkg)
    assert code == 1
    assert _section(out, "private names") == [
        "FAIL  private names used across modules: 3 (at most 0)",
        "pkg/b.py:1: pkg.a._helper", "pkg/c.py:4: pkg.a._SECRET", "pkg/c.py:5: pkg.a._SECRET"]


def test_modules_over_700_lines_fail_and_700_pass(tmp_path):
    pkg = _package(tmp_path, {"long.py": "X = 1\n" * 701, "fine.py": "X = 1\n" * 700})
    code, out = _measure(pkg)
    assert code == 1
    assert _section(out, "modules over 700 lines") == [
        "FAIL  modules over 700 lines: 1 (at most 0)", "pkg/long.py  701"]


def test_functions_over_80_lines_fail_and_80_pass(tmp_path):
    pkg = _package(tmp_path, {"f.py": _function("fine", 79) + "\n\n" + _function("long", 80)})
    code, out = _measure(pkg)
    assert code == 1
    assert _section(out, "functions over 80 lines") == [
        "FAIL  functions over 80 lines: 1 (at most 0)", "pkg/f.py:83 long  81"]


def test_more_than_ten_complex_functions_fail(tmp_path):
    def branches(name: str, n: int) -> str:  # complexity n + 1
        return f"def {name}(x):\n" + "".join(f"    if x == {i}:\n        return {i}\n"
                                             for i in range(n)) + "    return -1\n\n\n"

    ten = "".join(branches(f"f{i}", 10) for i in range(10)) + branches("simple", 9)
    pkg = _package(tmp_path, {"ten.py": ten})
    code, out = _measure(pkg)
    assert code == 0, out
    assert _section(out, "functions of complexity")[0].startswith("ok    functions of "
                                                                  "complexity > 10 (ruff C901): 10")
    pkg = _package(tmp_path, {"more.py": branches("eleventh", 10)})
    code, out = _measure(pkg)
    assert code == 1
    status, first, *_ = _section(out, "functions of complexity")
    assert status == "FAIL  functions of complexity > 10 (ruff C901): 11 (at most 10)"
    assert first.endswith(" 11")


def test_the_share_of_imports_inside_functions_fails_above_15_percent(tmp_path):
    module_level = "".join(f"import pkg.m{i}\n" for i in range(6))
    files = {f"m{i}.py": "" for i in range(6)}
    one_inside = module_level + "\n\ndef f():\n    import pkg.m0\n    return pkg.m0\n"
    code, out = _measure(_package(tmp_path / "one", {**files, "user.py": one_inside}))
    assert code == 0, out  # 1 of 7 = 14%
    two_inside = one_inside + "\n\ndef g():\n    from pkg import m1\n    return m1\n"
    code, out = _measure(_package(tmp_path / "two", {**files, "user.py": two_inside}))
    assert code == 1
    assert _section(out, "internal imports inside functions") == [
        "FAIL  internal imports inside functions (2 of 8): 25% (at most 15%)",
        "pkg/user.py:10 in f: pkg.m0", "pkg/user.py:15 in g: pkg.m1"]


def test_report_prints_every_failure_and_exits_zero(tmp_path):
    pkg = _package(tmp_path, {"a.py": "import pkg.b\n", "b.py": "import pkg.a\n"})
    code, out = _measure(pkg, "--report")
    assert code == 0
    assert out.splitlines()[-1] == "1 of 6 measures fail"


def test_a_directory_that_is_not_a_package_is_refused(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True,
                          text=True)
    assert done.returncode == 2
    assert "not a package directory" in done.stderr
