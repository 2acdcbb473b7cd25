"""One self-contained HTML page of sentences (:mod:`.records`' data): the CSS, the script (``assets/view.js``) and
the data (JSON in a ``<script type="application/json">``) inline, no external resource; a Content-Security-Policy
(``default-src 'none'``) forbids the page any request. The script draws the list (paged, searched, filtered) and
the selected sentence's trees (the drawing of :func:`fairseq_tree.trees.svg.tree_svg`), dependency arcs and
attention heat maps; it sets ``window.__ready`` once the first sentence is drawn.
"""

from __future__ import annotations

import json
from html import escape
from importlib import resources
from typing import Dict, List, Optional, Sequence

from fairseq_tree.trees import atomic_write_text

MODES = ("treebank", "compare", "sst", "induced", "attention")
CSP = ("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; "
       "connect-src 'none'; form-action 'none'")


def asset(name: str) -> str:
    """The text of ``fairseq_tree/view/assets/NAME`` (package data)."""
    return resources.files("fairseq_tree.view").joinpath("assets", name).read_text(encoding="utf-8")


def page_data(mode: str, sentences: List[Dict[str, object]], summary: Sequence[Sequence[str]] = (),
              title: str = "fairseq-tree-view") -> Dict[str, object]:
    """The page's data object (:mod:`.records`' module docstring); ``labels``: every label of the label filter."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
    labels = sorted({lab for s in sentences for lab in s.get("lab", ())})
    return {"title": title, "mode": mode, "summary": [list(r) for r in summary], "labels": labels,
            "sentences": sentences}


def json_script(data: object) -> str:
    """JSON that cannot end its ``<script>`` element (``<`` , ``>``, ``&`` and line separators as ``\\u`` escapes)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for ch in ("<", ">", "&", "\u2028", "\u2029"):
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


def render_html(data: Dict[str, object]) -> str:
    """The whole page as one string."""
    title = escape(str(data.get("title", "")))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
        f"<meta name=\"viewport\" content=\"width=device-width\"><title>{title}</title>"
        f"<style>{asset('view.css')}</style></head>\n<body>{asset('body.html')}"
        f"<script type=\"application/json\" id=\"view-data\">{json_script(data)}</script>\n"
        f"<script>{asset('view.js')}</script></body></html>\n")


class Page:
    """A page of sentences: ``html`` (the document), ``save(path)``, and shown inline by Jupyter (an iframe)."""

    def __init__(self, data: Dict[str, object]):
        self.data = data

    @property
    def html(self) -> str:
        return render_html(self.data)

    def save(self, path: str) -> str:
        atomic_write_text(path, self.html)
        return path

    def _repr_html_(self, height: int = 640) -> str:
        return (f'<iframe srcdoc="{escape(self.html, quote=True)}" style="width:100%;height:{height}px;border:0" '
                f'sandbox="allow-scripts"></iframe>')


def page(mode: str, sentences: List[Dict[str, object]], summary: Sequence[Sequence[str]] = (),
         title: Optional[str] = None) -> Page:
    """A :class:`Page` of ``sentences`` (records of :mod:`.records`)."""
    return Page(page_data(mode, sentences, summary, title or f"fairseq-tree-view: {mode}"))
