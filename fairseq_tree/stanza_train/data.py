"""Data preparation for :mod:`fairseq_tree.stanza_train.trainer` (steps 1 to 4 of its docstring): stanza trees
of a treebank, the train/dev split, the parser's .mrg and the tagger's CoNLL-U files, word vectors.

The trees here are stanza's own (``stanza.models.constituency.parse_tree.Tree``), read by stanza's reader because
its trainer must see what it reads; the CoNLL-U file goes through the one writer,
:func:`fairseq_tree.trees.write_conllu`.
"""

from __future__ import annotations

import collections
import logging
import re
import time
from pathlib import Path
from typing import List, Sequence, Tuple

from fairseq_tree.trees import ptb_to_upos
from fairseq_tree.trees import write_conllu as write_conllu_file

logger = logging.getLogger("stanza_train")

DEV_NAME = re.compile(r"^(valid|dev|wsj_?22)", re.IGNORECASE)


def _root_wrap(tree):
    from stanza.models.constituency.parse_tree import Tree

    if tree.label in ("ROOT", "TOP", ""):
        return Tree("ROOT", tree.children)
    return Tree("ROOT", [tree])


def read_trees(path: Path, stats: collections.Counter) -> list:
    """stanza Trees (``(ROOT (X ...))``) of one bracket file, via tree_reader.read_treebank."""
    from stanza.models.constituency import tree_reader

    try:
        trees = tree_reader.read_treebank(str(path), tree_callback=_root_wrap)
    except (ValueError, AttributeError) as e:  # several children at ROOT, or a tree empty after pruning
        logger.warning("%s: %s; reading tree by tree and skipping the bad ones", path, str(e).split("\n")[0])
        trees = []
        for t in tree_reader.read_tree_file(str(path), tree_callback=_root_wrap):
            t = t.prune_none()
            if t is None:
                stats["skipped_empty"] += 1
                continue
            t = t.simplify_labels()
            if len(t.children) != 1:
                stats["skipped_multi_root"] += 1
                continue
            trees.append(t)
    kept = []
    for t in trees:
        if t.children[0].is_preterminal():
            stats["skipped_preterminal_root"] += 1
        else:
            kept.append(t)
    return kept


def split_treebank(treebank: Path, dev_mode: str, stats: collections.Counter) -> Tuple[list, list, dict]:
    files = [treebank] if treebank.is_file() else sorted(treebank.glob("*.mrg"))
    if not files:
        raise SystemExit(f"no *.mrg files in {treebank}")
    dev_files = [f for f in files if DEV_NAME.match(f.name)] if dev_mode == "auto" else []
    train_files = [f for f in files if f not in dev_files]
    if not train_files:  # only dev-named files: hold out a slice instead
        dev_files, train_files = [], files
    train, dev = [], []
    for f in files:
        t0 = time.perf_counter()
        trees = read_trees(f, stats)
        logger.info("read %d trees from %s (%.1f s)", len(trees), f, time.perf_counter() - t0)
        (dev if f in dev_files else train).extend(trees)
    if dev_files:
        how = "files " + ", ".join(f.name for f in dev_files)
    else:
        n_dev = min(300, max(1, round(0.05 * len(train))))
        if len(train) < 2:
            raise SystemExit(f"need at least 2 trees, found {len(train)} in {treebank}")
        train, dev = train[:-n_dev], train[-n_dev:]
        how = f"last {n_dev} trees (5 % capped at 300)"
    info = {"train_files": [str(f) for f in train_files], "dev_files": [str(f) for f in dev_files], "dev_split": how}
    return train, dev, info


def words_tags(tree) -> Tuple[List[str], List[str]]:
    pts = list(tree.yield_preterminals())
    return [p.children[0].label for p in pts], [p.label for p in pts]


def write_conllu(trees: Sequence, path: Path) -> None:
    """The tagger's training data: words, UPOS (:func:`ptb_to_upos`) and PTB tags of stanza trees, with dummy
    heads (word 1 the root, the others attached to it), through the one CoNLL-U writer."""
    sents = [words_tags(t) for t in trees]
    write_conllu_file(str(path), [w for w, _ in sents], [[0] + [1] * (len(w) - 1) for w, _ in sents],
                      [t for _, t in sents], upos=[[ptb_to_upos(x) for x in t] for _, t in sents],
                      blank_after_last=True)


def write_mrg(trees: Sequence, path: Path) -> None:
    from stanza.models.constituency.parse_tree import Tree

    Tree.write_treebank(trees, str(path))


def build_vectors(sentences: List[List[str]], dim: int, path: Path, max_vocab: int = 100000, window: int = 2,
                  seed: int = 1234) -> str:
    """word2vec-text vectors: PPMI + SVD (scipy) or random; returns the method used."""
    import numpy as np

    counts = collections.Counter(w for s in sentences for w in s)
    vocab = [w for w, _ in counts.most_common(max_vocab)]
    idx = {w: i for i, w in enumerate(vocab)}
    n = len(vocab)
    method = "random"
    vec = None
    try:
        import scipy.sparse as sp
        from scipy.sparse.linalg import svds

        if n > dim + 1:
            rows, cols = [], []
            for s in sentences:
                ids = [idx.get(w, -1) for w in s]
                for i, a in enumerate(ids):
                    if a < 0:
                        continue
                    for j in range(max(0, i - window), min(len(ids), i + window + 1)):
                        if i != j and ids[j] >= 0:
                            rows.append(a)
                            cols.append(ids[j])
            m = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n)).tocsr()
            total = m.sum()
            rs = np.asarray(m.sum(1)).ravel()
            cs = np.asarray(m.sum(0)).ravel() ** 0.75
            cs = cs / cs.sum() * total
            m = m.tocoo()
            pmi = np.log(m.data * total / (rs[m.row] * cs[m.col]))
            keep = pmi > 0
            ppmi = sp.csr_matrix((pmi[keep], (m.row[keep], m.col[keep])), shape=(n, n))
            u, s, _ = svds(ppmi, k=dim, random_state=seed)
            vec = u * np.sqrt(s)
            method = "ppmi_svd"
    except ImportError:
        pass
    if vec is None:
        vec = np.random.default_rng(seed).standard_normal((n, dim))
    vec = vec / (np.linalg.norm(vec, axis=1, keepdims=True) + 1e-8)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{n} {dim}\n")
        for w, v in zip(vocab, vec):
            f.write(w + " " + " ".join("%.5f" % x for x in v) + "\n")
    return method


def read_text_tokens(paths: Sequence[str], max_lines: int) -> List[List[str]]:
    out: List[List[str]] = []
    for p in paths:
        with open(p, encoding="utf-8", errors="replace") as f:
            for line in f:
                if len(out) >= max_lines:
                    return out
                toks = line.lower().split()
                if toks:
                    out.append(toks)
    return out
