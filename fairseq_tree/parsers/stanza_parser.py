"""Constituency parsing of pre-tokenized English with stanza (``tokenize,pos,constituency``), offline.

Models come from (first match wins, see :func:`resolve_stanza_models`):

1. explicit paths ``pos_model`` / ``constituency_model`` / ``pretrain`` (missing ones are taken from ``model_dir``);
2. ``model_dir``: a directory written by ``fairseq-tree-train-stanza`` (``pos.pt``, ``constituency.pt``,
   ``pretrain.pt``, ``resources.json``);
3. the stanza resources dir (``$STANZA_RESOURCES_DIR``, else ``~/stanza_resources``): either the layout of 2.,
   or stanza's own downloaded English default models;
4. ``download=True`` only: ``stanza.download('en', ...)`` into the resources dir.

Nothing here touches the network unless ``download=True``: the pipeline is built with ``download_method=None``,
a local ``resources.json`` and explicit pretrain paths (a parser model stores its training-time pretrain path,
and stanza downloads a default one when that path does not resolve).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from fairseq_tree.parsers import BatchedBackend, ParseError, resolve_device
from fairseq_tree.trees import escape_word

logger = logging.getLogger(__name__)

LANG = "en"  # the default language; StanzaParser(lang=...) / --stanza-lang for any other
PROCESSORS = "tokenize,pos,constituency"
MODEL_FILES = {"pos_model": "pos.pt", "constituency_model": "constituency.pt", "pretrain": "pretrain.pt"}
# the installed console script (the [stanza] extra), not a checkout's recipe: a pip-installed user has no scripts/
TRAIN_HINT = ("Train local models (offline, ~20 s tiny / ~12 min small on 2 cores) from the *.mrg trees of "
              "TREEBANK_DIR with\n"
              "    fairseq-tree-train-stanza TREEBANK_DIR OUTDIR --size small\n"
              "and pass --stanza-model-dir OUTDIR (model_dir=OUTDIR in Python), or allow downloading "
              "stanza's English models with download=True (--stanza-download, needs a network).")

# words stanza may get as escaped brackets: give it the raw characters it was trained on
_UNESCAPE_INPUT = {"-LRB-": "(", "-RRB-": ")"}

__all__ = ["StanzaParser", "ParseError", "resolve_stanza_models", "default_resources_dir", "tree_to_brackets"]


def default_resources_dir() -> Path:
    return Path(os.environ.get("STANZA_RESOURCES_DIR") or Path.home() / "stanza_resources").expanduser()


def _model_dir_files(d: Path) -> Optional[Dict[str, str]]:
    files = {k: d / v for k, v in MODEL_FILES.items()}
    if all(p.is_file() for p in files.values()):
        return {k: str(p.resolve()) for k, p in files.items()}
    return None


def _stanza_default_models(d: Path, lang: str = LANG) -> Optional[Dict[str, str]]:
    """stanza's downloaded default models of ``lang`` in resources dir ``d``, or None."""
    try:
        with open(d / "resources.json", encoding="utf-8") as f:
            res = json.load(f)
        entry = res.get(lang, {})
        if "alias" in entry:
            lang = entry["alias"]
            entry = res.get(lang, {})
        # stanza >= 1.4: packages.default.{pos,constituency}; older files: default_processors
        defaults = entry.get("packages", {}).get("default") or entry.get("default_processors", {})
        pos, con = defaults["pos"], defaults["constituency"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    paths = {"pos_model": d / lang / "pos" / f"{pos}.pt", "constituency_model": d / lang / "constituency" / f"{con}.pt"}
    if all(p.is_file() for p in paths.values()):
        return {k: str(p) for k, p in paths.items()}
    return None


def resolve_stanza_models(pos_model: Optional[str] = None, constituency_model: Optional[str] = None,
                          pretrain: Optional[str] = None, model_dir: Optional[str] = None,
                          download: bool = False, lang: str = LANG) -> Dict[str, Optional[str]]:
    """Find the models; never touches the network unless ``download``.

    Returns ``{'source', 'pos_model', 'constituency_model', 'pretrain', 'resources_dir'}``:

    * ``source='local'``: our own models; all three paths are absolute files, ``resources_dir`` holds a
      ``resources.json`` or is None (then the parser writes a temporary one);
    * ``source='stanza'``: stanza's downloaded defaults of ``lang`` in ``resources_dir`` (``pretrain`` None:
      stanza resolves pretrain/charlm files through its resources.json).

    Raises FileNotFoundError listing every place looked at.
    """
    looked: List[str] = []
    explicit = {"pos_model": pos_model, "constituency_model": constituency_model, "pretrain": pretrain}
    if model_dir is not None or any(explicit.values()):
        found: Dict[str, Optional[str]] = {}
        d = Path(model_dir).expanduser() if model_dir is not None else None
        for key, given in explicit.items():
            p = Path(given).expanduser() if given else (d / MODEL_FILES[key] if d is not None else None)
            if p is None:
                looked.append(f"{key}: not given, and no model_dir to take {MODEL_FILES[key]} from")
            elif not p.is_file():
                looked.append(f"{key}: {p} (missing)")
            else:
                found[key] = str(p.resolve())
        if len(found) == 3:
            res_dir = str(d.resolve()) if d is not None and (d / "resources.json").is_file() else None
            return {"source": "local", "resources_dir": res_dir, **found}
        raise FileNotFoundError("stanza models not found:\n  " + "\n  ".join(looked) + "\n" + TRAIN_HINT)

    res_dir = default_resources_dir()
    local = _model_dir_files(res_dir)
    if local:
        return {"source": "local", "resources_dir": str(res_dir.resolve()) if (res_dir / "resources.json").is_file()
                else None, **local}
    looked.append(f"{res_dir}/{{{','.join(MODEL_FILES.values())}}} "
                  "(models trained by fairseq-tree-train-stanza)")
    default = _stanza_default_models(res_dir, lang)
    if default is None and download:
        import stanza

        logger.warning("downloading stanza's %s models into %s", lang, res_dir)
        stanza.download(lang, model_dir=str(res_dir), processors=PROCESSORS, logging_level="WARN")
        default = _stanza_default_models(res_dir, lang)
    if default:
        return {"source": "stanza", "resources_dir": str(res_dir), "pretrain": None, **default}
    looked.append(f"{res_dir}/resources.json + {res_dir}/{lang}/{{pos,constituency}}/<default package>.pt "
                  f"(stanza's downloaded {lang} models)")
    raise FileNotFoundError("no stanza models given (pos_model/constituency_model/pretrain or model_dir) and none "
                            "found; looked for:\n  " + "\n  ".join(looked)
                            + ("" if download else "\n(download=False: nothing was downloaded)") + "\n" + TRAIN_HINT)


_TMP_RESOURCES: Dict[str, str] = {}


def _temp_resources_dir(lang: str = LANG) -> str:
    """A per-process directory holding a minimal resources.json for ``lang`` (stanza always reads one)."""
    d = _TMP_RESOURCES.get(lang)
    if d is None or not os.path.isfile(os.path.join(d, "resources.json")):
        d = _TMP_RESOURCES[lang] = tempfile.mkdtemp(prefix="stanza_res_")
        with open(os.path.join(d, "resources.json"), "w", encoding="utf-8") as f:
            json.dump({lang: {"lang_name": lang}}, f)
        atexit.register(shutil.rmtree, d, True)
    return d


def _lists_lang(resources_dir: str, lang: str) -> bool:
    """Whether ``resources_dir/resources.json`` has an entry for ``lang`` (stanza refuses a language it lacks)."""
    try:
        with open(os.path.join(resources_dir, "resources.json"), encoding="utf-8") as f:
            return lang in json.load(f)
    except (OSError, ValueError):
        return False


def _escape(text: str) -> str:
    return text.replace("(", "-LRB-").replace(")", "-RRB-")


def tree_to_brackets(tree) -> str:
    """One-line PTB brackets of a stanza Tree; ``(``/``)`` in words and labels become ``-LRB-``/``-RRB-``, and
    words that are ``{ } [ ]`` are written as the treebank spells them (``trees.escape_word``).

    Iterative (no recursion limit on deep trees); labels are kept as stanza gives them."""
    out: List[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if node is None:
            out.append(")")
        elif not node.children:
            out.append(" " + _escape(escape_word(node.label)))
        else:
            out.append(("(" if not out else " (") + _escape(node.label))
            stack.append(None)
            stack.extend(reversed(node.children))
    return "".join(out).lstrip(" ")


class StanzaParser(BatchedBackend):
    """``StanzaParser(model_dir=...)`` or explicit paths; ``parse(list of token lists) -> list of bracket strings``
    (``(ROOT (S ...))`` on one line, leaves == the given tokens, ``(``/``)`` written ``-LRB-``/``-RRB-``), in
    length-sorted batches of ``constituency_batch_size`` sentences (stanza sorts them: :meth:`call_size`) on
    ``device``.

    Construction loads the models (~2 s plus ``import stanza``). Pickling keeps only the options, so a
    worker process rebuilds the pipeline; :meth:`from_options` is the picklable factory for worker processes.
    """

    def __init__(self, pos_model: Optional[str] = None, constituency_model: Optional[str] = None,
                 pretrain: Optional[str] = None, model_dir: Optional[str] = None, download: bool = False,
                 constituency_batch_size: int = 64, pos_batch_size: Optional[int] = None, device: Optional[str] = None,
                 num_threads: Optional[int] = None, sort_by_length: bool = True, lang: str = LANG):
        self.options = dict(pos_model=pos_model, constituency_model=constituency_model, pretrain=pretrain,
                            model_dir=model_dir, download=download, constituency_batch_size=constituency_batch_size,
                            pos_batch_size=pos_batch_size, device=device, num_threads=num_threads,
                            sort_by_length=sort_by_length, lang=lang)
        device = resolve_device(device)
        self.batch_size, self.sort_by_length = int(constituency_batch_size), bool(sort_by_length)
        self.lang = lang
        self.paths = resolve_stanza_models(pos_model, constituency_model, pretrain, model_dir, download, lang)
        import stanza
        import torch

        if num_threads:
            torch.set_num_threads(int(num_threads))
        kwargs = dict(lang=lang, processors=PROCESSORS, download_method=None, tokenize_pretokenized=True,
                      logging_level="WARN", use_gpu=device != "cpu", device=device,
                      constituency_batch_size=int(constituency_batch_size))
        if pos_batch_size:
            kwargs["pos_batch_size"] = int(pos_batch_size)
        if self.paths["source"] == "local":
            res = self.paths["resources_dir"]
            kwargs.update(dir=res if res and _lists_lang(res, lang) else _temp_resources_dir(lang),
                          pos_model_path=self.paths["pos_model"], pos_pretrain_path=self.paths["pretrain"],
                          constituency_model_path=self.paths["constituency_model"],
                          constituency_pretrain_path=self.paths["pretrain"])
        else:
            kwargs.update(dir=self.paths["resources_dir"])
        self.nlp = stanza.Pipeline(**kwargs)

    @classmethod
    def from_options(cls, **options) -> "StanzaParser":
        """Build from a (picklable) options dict; None values mean "default"; ``batch_size`` is an alias of
        ``constituency_batch_size`` (the preprocessing CLI's ``--stanza-batch-size``)."""
        options = {k: v for k, v in options.items() if v is not None}
        if "batch_size" in options:
            options.setdefault("constituency_batch_size", options["batch_size"])
            del options["batch_size"]
        return cls(**options)

    def __getstate__(self):
        return {"options": self.options}

    def __setstate__(self, state):
        self.__init__(**state["options"])

    def __repr__(self) -> str:
        return f"StanzaParser({self.paths})"

    # ------------------------------------------------------------------ parsing

    def prepare(self, sentence: Sequence[str]) -> List[str]:
        """A token list -> the tokens stanza reads (``-LRB-``/``-RRB-`` as ``(``/``)``); ValueError if unusable."""
        if isinstance(sentence, str) or not len(sentence):
            raise ValueError("empty sentence" if not len(sentence) else "expected a list of tokens, got a str")
        for j, w in enumerate(sentence):
            if not isinstance(w, str) or not w or any(c.isspace() for c in w):
                raise ValueError(f"token {j + 1} ({w!r}) is empty or contains whitespace")
        return [_UNESCAPE_INPUT.get(w, w) for w in sentence]

    def call_size(self, n: int) -> int:
        """Sorted: all ``n`` sentences in one ``nlp`` call, because stanza sorts them itself (POS: by length into
        batches of <= 5000 tokens; constituency: longest first, ``constituency_batch_size`` parser states, a
        finished sentence's slot refilled with the next) and restores the input order; a little faster than our
        own sorted chunks of ``constituency_batch_size`` (200 ptb_sample sentences, the demo's parser, one thread:
        3.3 s against 3.5 s; input-order chunks 4.9 s). Unsorted (benchmarks): one call per
        ``constituency_batch_size`` sentences in input order."""
        return max(n, 1) if self.sort_by_length else self.batch_size

    def parse_batch(self, items: List[List[str]]) -> List[str]:
        """Token lists -> their brackets, one ``nlp`` call."""
        return self._parse_checked(items)

    def describe(self, e: Exception) -> str:
        return _describe(e)

    def _parse_checked(self, batch: List[List[str]]) -> List[str]:
        doc = self.nlp(batch)
        if len(doc.sentences) != len(batch):
            raise RuntimeError(f"stanza returned {len(doc.sentences)} sentences for {len(batch)}")
        out = []
        for toks, sent in zip(batch, doc.sentences):
            tree = sent.constituency
            if tree is None:
                raise RuntimeError("stanza returned no tree")
            leaves = tree.leaf_labels()
            if leaves != toks:
                bad = next((j for j, (a, b) in enumerate(zip(leaves, toks)) if a != b), min(len(leaves), len(toks)))
                raise RuntimeError(f"tree has {len(leaves)} leaves for {len(toks)} tokens; first difference at "
                                   f"token {bad + 1}")
            out.append(tree_to_brackets(tree))
        return out


def _describe(e: Exception) -> str:
    return f"stanza failed: {type(e).__name__}: {e}"
