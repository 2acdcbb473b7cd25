"""One-line mutants of a Python module: the plausible slips a reviewer misses, each as a change of one statement.

:func:`mutants` parses the module (``ast``) and yields :class:`Mutant` s, each the module's text with one edit:

=============  ==========================================================================================
operator       edit
=============  ==========================================================================================
compare        a comparison's boundary or sense: ``<`` -> ``<=``, ``>=`` -> ``>``, ``==`` -> ``!=``,
               ``in`` -> ``not in``, ``is`` -> ``is not`` (and back)
boolop         ``and`` <-> ``or``
not            ``not x`` -> ``x``
binop          ``+`` <-> ``-``, ``/`` <-> ``//``
number         an integer constant off by one (``0`` -> ``1``, ``n`` -> ``n - 1``)
bool           ``True`` <-> ``False``
string         a separator or control literal (no letter, no digit: ``b"\\r\\n"``, ``" "``, ``"\\t"``, ``"."``)
               loses its first character (``b"\\r\\n"`` -> ``b"\\n"``, ``" "`` -> ``""``)
name           a function swapped for its twin: abspath/realpath, min/max, any/all, startswith/endswith,
               isfile/exists, ge/gt, le/lt
args           a call's first two positional arguments swapped (neither a literal; not min, max ..)
kwarg          a call's keyword argument dropped (``exist_ok=True``, ``weights_only=True``)
dict_entry     one entry of a dict literal dropped
drop           a statement dropped (a call, an assignment to an attribute or item, ``x += ..``, ``raise``,
               ``return x``, ``continue``, ``break``): replaced by ``pass``
=============  ==========================================================================================

Not mutated: docstrings, type annotations, ``__all__``, log calls (``logger.*``, ``logging.*``), f-strings, string
literals with letters or digits (names and messages: a typo there is no plausible slip) or longer than
:data:`MAX_STRING`, and lines marked ``# pragma: no mutate``. Every mutant
compiles; one whose text equals the original is not made.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

#: the longest string literal mutated (longer ones are messages)
MAX_STRING = 12
#: names swapped by the ``name`` operator (both ways)
TWINS = [("abspath", "realpath"), ("min", "max"), ("any", "all"), ("startswith", "endswith"),
         ("isfile", "exists"), ("ge", "gt"), ("le", "lt")]
SWAP = {a: b for a, b in TWINS} | {b: a for a, b in TWINS}
COMPARE = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
           ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
           ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is")}
BINOP = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Div: ("/", "//"), ast.FloorDiv: ("//", "/")}
NO_MUTATE = "pragma: no mutate"
#: calls whose first two arguments commute (swapping them is no bug)
COMMUTATIVE = {"min", "max", "isclose", "allclose", "equal"}
LOGGERS = ("logger", "logging", "log")


@dataclass(frozen=True)
class Mutant:
    path: str  # the module's path, relative to the repository root
    line: int  # 1-based number of the first line changed
    operator: str
    before: str  # the changed line(s) as they were (stripped)
    after: str  # what replaces them (stripped)
    text: str  # the whole mutated module
    nth: int = 1  # the same edit of an identical line further down the file: 2, 3, ..

    @property
    def key(self) -> str:
        """A name that survives edits elsewhere in the file (no line number): the config's pinned and equivalent
        mutants are listed by it."""
        return f"{self.before}  ->  {self.after}" + (f"  #{self.nth}" if self.nth > 1 else "")

    def diff(self) -> str:
        return f"{self.path}:{self.line} [{self.operator}]\n  - {self.before}\n  + {self.after}"


class _Source:
    """The module's lines, and edits of one span of one line (``ast`` columns are UTF-8 byte offsets)."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines(keepends=True)

    def col(self, line: int, byte_col: int) -> int:
        return len(self.lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8"))

    def span(self, node) -> Optional[Tuple[int, int, int]]:
        """(line, start, end) character span of a node on one line, else None."""
        if node.lineno != node.end_lineno:
            return None
        return node.lineno, self.col(node.lineno, node.col_offset), self.col(node.lineno, node.end_col_offset)

    def replace(self, line: int, start: int, end: int, new: str) -> Tuple[str, str, str]:
        """-> (mutated text, the line before, the line after) with characters [start, end) of ``line`` replaced."""
        old = self.lines[line - 1]
        changed = old[:start] + new + old[end:]
        return "".join(self.lines[:line - 1] + [changed] + self.lines[line:]), old.strip(), changed.strip()


def _skipped_nodes(tree: ast.AST) -> set:
    """ids of the nodes never mutated: annotations, docstrings, ``__all__``, f-strings, log calls (with all
    their descendants)."""
    roots: List[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots += [a.annotation for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs
                      if a.annotation] + ([node.returns] if node.returns else [])
            for a in (node.args.vararg, node.args.kwarg):
                if a is not None and a.annotation:
                    roots.append(a.annotation)
        if isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                roots.append(first)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            roots.append(node)
        if isinstance(node, ast.JoinedStr):
            roots.append(node)
        if isinstance(node, ast.Call) and _is_log_call(node):
            roots.append(node)
    return {id(n) for r in roots for n in ast.walk(r)}


def _is_log_call(call: ast.Call) -> bool:
    f = call.func
    while isinstance(f, ast.Attribute):
        f = f.value
    return isinstance(f, ast.Name) and f.id in LOGGERS


def _parents(tree: ast.AST) -> dict:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _op_between(src: _Source, left, right, pattern: str) -> Optional[Tuple[int, int, int]]:
    """The span of the operator matching ``pattern`` between two nodes on one line."""
    if left.end_lineno != right.lineno:
        return None
    line = right.lineno
    a, b = src.col(line, left.end_col_offset), src.col(line, right.col_offset)
    m = re.search(pattern, src.lines[line - 1][a:b])
    return (line, a + m.start(), a + m.end()) if m else None


def _drop_element(spans: Sequence[Tuple[int, int]], i: int) -> Tuple[int, int]:
    """The characters to delete to drop element ``i`` of a comma-separated list on one line, its comma with it."""
    start, end = spans[i]
    if i > 0:
        return spans[i - 1][1], end  # ", x" after the previous element
    if len(spans) > 1:
        return start, spans[1][0]  # "x, " before the next one
    return start, end


def _statement_lines(src: _Source, stmt) -> Optional[Tuple[int, int]]:
    """(first, last) line of a statement that has its lines to itself (no ``;``, no ``if x: y``), else None."""
    first, last = stmt.lineno, stmt.end_lineno
    head = src.lines[first - 1]
    if src.col(first, stmt.col_offset) != len(head) - len(head.lstrip()):
        return None
    tail = src.lines[last - 1][src.col(last, stmt.end_col_offset):].strip()
    if tail and not tail.startswith("#"):
        return None
    return first, last


def _droppable(stmt, parent) -> bool:
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, (ast.Call, ast.Await))
    if isinstance(stmt, ast.Assign):
        return all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in stmt.targets)
    if isinstance(stmt, ast.Return):
        return stmt.value is not None and not (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
    return isinstance(stmt, (ast.AugAssign, ast.Raise, ast.Continue, ast.Break))


def _edits(src: _Source, tree: ast.AST) -> Iterator[Tuple[str, int, int, int, str]]:
    """(operator, line, start, end, replacement) of every one-span edit."""
    skipped = _skipped_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                old, new = COMPARE[type(op)]
                left = node.left if i == 0 else node.comparators[i - 1]
                pat = r"\bnot\s+in\b|\bis\s+not\b" if " " in old else (
                    rf"(?<![<>=!]){re.escape(old)}(?![<>=])" if not old.isalpha() else rf"\b{old}\b")
                at = _op_between(src, left, node.comparators[i], pat)
                if at:
                    yield ("compare", *at, new)
        elif isinstance(node, ast.BoolOp):
            old = "and" if isinstance(node.op, ast.And) else "or"
            for a, b in zip(node.values, node.values[1:]):
                at = _op_between(src, a, b, rf"\b{old}\b")
                if at:
                    yield ("boolop", *at, "or" if old == "and" else "and")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            outer, inner = src.span(node), src.span(node.operand)
            if outer and inner and outer[0] == inner[0]:
                yield ("not", outer[0], outer[1], inner[1], "")
        elif isinstance(node, ast.BinOp) and type(node.op) in BINOP:
            old, new = BINOP[type(node.op)]
            at = _op_between(src, node.left, node.right, rf"(?<![/*]){re.escape(old)}(?![/=*])")
            if at:
                yield ("binop", *at, new)
        elif isinstance(node, ast.Constant):
            yield from _constant_edits(src, node)
        elif isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            at = src.span(node)
            if name in SWAP and at:
                yield ("name", at[0], at[2] - len(name), at[2], SWAP[name])
        if isinstance(node, ast.Call):
            yield from _call_edits(src, node)
        elif isinstance(node, ast.Dict) and len(node.keys) > 1 and None not in node.keys:
            spans = [src.span(k) for k in node.keys] + [src.span(v) for v in node.values]
            if all(spans) and len({s[0] for s in spans}) == 1:
                line = spans[0][0]
                items = [(src.span(k)[1], src.span(v)[2]) for k, v in zip(node.keys, node.values)]
                for i in range(len(items)):
                    a, b = _drop_element(items, i)
                    yield ("dict_entry", line, a, b, "")


def _constant_edits(src: _Source, node: ast.Constant) -> Iterator[Tuple[str, int, int, int, str]]:
    at = src.span(node)
    if at is None:
        return
    v = node.value
    if isinstance(v, bool):
        yield ("bool", *at, str(not v))
    elif isinstance(v, int):
        yield ("number", *at, str(v + 1 if v == 0 else v - 1))
    elif isinstance(v, (str, bytes)) and 0 < len(v) <= MAX_STRING and not re.search(
            r"\w", v if isinstance(v, str) else v.decode("latin-1")):
        old = src.lines[at[0] - 1][at[1]:at[2]]
        if not re.fullmatch(r"[bB]?[\"'].*[\"']", old):  # implicit concatenation, triple quotes, raw/prefixed
            return
        prefix = "b" if isinstance(v, bytes) else ""
        body = repr(v[1:])[len(prefix):]  # 'text', quotes included
        if old[len(prefix)] == '"' and not {"'", '"'} & set(body[1:-1]):
            body = f'"{body[1:-1]}"'  # the source's quotes
        yield ("string", *at, prefix + body)


def _call_edits(src: _Source, call: ast.Call) -> Iterator[Tuple[str, int, int, int, str]]:
    args = [a for a in call.args if not isinstance(a, ast.Starred)]
    name = call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", None)
    if len(args) == len(call.args) >= 2 and not any(isinstance(a, ast.Constant) for a in args[:2]) \
            and name not in COMMUTATIVE:
        a, b = src.span(args[0]), src.span(args[1])
        if a and b and a[0] == b[0]:
            line, text = a[0], src.lines[a[0] - 1]
            x, y = text[a[1]:a[2]], text[b[1]:b[2]]
            if x != y:
                yield ("args", line, a[1], b[2], y + text[a[2]:b[1]] + x)
    elements = [src.span(e) for e in list(call.args) + list(call.keywords)]
    if not call.keywords or not all(elements) or len({e[0] for e in elements}) != 1:
        return
    elements.sort(key=lambda e: e[1])
    spans = [(e[1], e[2]) for e in elements]
    line = elements[0][0]
    for kw in call.keywords:
        if kw.arg is None:
            continue
        i = spans.index(src.span(kw)[1:])
        a, b = _drop_element(spans, i)
        yield ("kwarg", line, a, b, "")


def _drops(src: _Source, tree: ast.AST) -> Iterator[Tuple[int, int, str]]:
    """(first line, last line, operator) of every statement that can be dropped."""
    skipped = _skipped_nodes(tree)
    parents = _parents(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or id(node) in skipped or not _droppable(node, parents.get(id(node))):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and id(node.value) in skipped:
            continue
        lines = _statement_lines(src, node)
        if lines:
            yield (*lines, "drop")


def mutants(path: str, text: str) -> List[Mutant]:
    """Every mutant of the module ``text`` (its repository path ``path``), in line order."""
    tree = ast.parse(text)
    src = _Source(text)
    out = []
    for op, line, start, end, new in _edits(src, tree):
        if NO_MUTATE in src.lines[line - 1]:
            continue
        mutated, before, after = src.replace(line, start, end, new)
        out.append((line, start, op, before, after, mutated))
    for first, last, op in _drops(src, tree):
        if any(NO_MUTATE in src.lines[k - 1] for k in range(first, last + 1)):
            continue
        head = src.lines[first - 1]
        indent = head[:len(head) - len(head.lstrip())]
        mutated = "".join(src.lines[:first - 1] + [indent + "pass\n"] + src.lines[last:])
        before = head.strip() + (" ..." if last > first else "")
        out.append((first, -1, op, before, "pass", mutated))
    made, seen, edits = [], set(), Counter()
    for line, _, op, before, after, mutated in sorted(out, key=lambda m: (m[0], m[1], m[2], m[4])):
        if mutated == text or mutated in seen:
            continue
        try:
            compile(mutated, path, "exec")
        except SyntaxError:
            continue
        seen.add(mutated)
        edits[before, after] += 1
        made.append(Mutant(path, line, op, before, after, mutated, edits[before, after]))
    return made
