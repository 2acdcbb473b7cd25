"""Every text file the package opens names its encoding: under LANG=C without UTF-8 coercion (some cluster jobs)
Python's default is ASCII, and a UTF-8 treebank, BPE codes file or a path with an accent in a fingerprint would
fail to read there (``test_trees_io.py::test_utf8_files_read_under_an_ascii_locale`` runs one such process)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "fairseq_tree"


def _mode(call: ast.Call):
    if len(call.args) > 1:
        return call.args[1].value if isinstance(call.args[1], ast.Constant) else None
    kw = {k.arg: k.value for k in call.keywords}
    return kw["mode"].value if isinstance(kw.get("mode"), ast.Constant) else "r" if "mode" not in kw else None


def text_opens_without_encoding(source: str):
    """Line numbers of ``open(...)`` in text mode and ``.read_text()`` / ``.write_text(...)`` without
    ``encoding=`` (a mode that is not a literal counts as text)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or any(k.arg == "encoding" for k in node.keywords):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            mode = _mode(node)
            if mode is None or "b" not in mode:
                out.append(node.lineno)
        elif isinstance(f, ast.Attribute) and f.attr in ("read_text", "write_text"):
            out.append(node.lineno)
    return out


def test_the_rule_on_hand_made_lines():
    src = ("open(p)\nopen(p, 'w')\nopen(p, 'rb')\nopen(p, mode='wb')\nopen(p, encoding='utf-8')\n"
           "open(p, m)\nP.read_text()\nP.write_text(s, encoding='utf-8')\nos.open(p, 0)\n")
    assert text_opens_without_encoding(src) == [1, 2, 6, 7]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_package_names_every_text_encoding(path):
    assert text_opens_without_encoding(path.read_text(encoding="utf-8")) == []
