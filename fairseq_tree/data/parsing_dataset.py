"""Dataset and collater for ``--task constituency_parsing`` (files written by ``fairseq_tree.data.parsing_data``).

A batch (right-padded; n = longest sentence in words, T = n + 2 with BOS and EOS)::

    net_input:
      src_tokens  [B, T]      word ids, BOS w_1 .. w_n EOS, then pad
      src_tags    [B, T]      POS tag ids (tag dict BOS/EOS at the ends)
      src_chars   [B, T, C]   char ids per token (pad 1); BOS/EOS tokens hold the char dict's BOS/EOS id
      src_lengths [B]         n_b, words only
      pt_*                    (a model with --pretrained-encoder only) its subwords and pooling offsets, made by
                              the task's ``subwords`` function from the words as strings (data/subwords.py)
    gold_spans  list of B lists of (start, end, class): half-open fenceposts 0..n_b, class = label id - nspecial
    gold_chart  [B, n+1, n+1] class + 1 of each gold span, 0 = not a constituent
    heads       [B, n+1] gold head of word d (1..n_b) in 0..n_b; column 0 and padding 0   (if dependencies)
    rels        [B, n+1] gold relation class of word d (rel id - nspecial)                 (if dependencies)
"""

from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import torch

from fairseq_tree.data.parsing_data import word_chars
from fairseq_tree.data.sized_dataset import SizedDataset


def spans_to_chart(spans: List[List[Tuple[int, int, int]]], n: int) -> torch.Tensor:
    """Labeled spans ``(start, end, class)`` per sentence -> ``[B, n+1, n+1]`` long chart of class + 1 (0 = not a
    constituent): the batch's ``gold_chart``."""
    chart = torch.zeros(len(spans), n + 1, n + 1, dtype=torch.long)
    for b, sp in enumerate(spans):
        for i, j, c in sp:
            chart[b, i, j] = c + 1
    return chart


class ParsingDataset(SizedDataset):
    """``text``: the sentences' words as strings (``{split}.text.jsonl``), or None; ``subwords``: the collater's
    words -> subwords function (set by the task once the model is built), or None."""

    def __init__(self, words, tags, chars, spans, heads, rels, dicts, shuffle=True, text=None, subwords=None):
        self.words, self.tags, self.chars, self.spans, self.heads, self.rels = words, tags, chars, spans, heads, rels
        self.dicts = dicts
        self.shuffle = shuffle
        self.text, self.subwords = text, subwords
        self.sizes = np.array([len(words[i]) + 2 for i in range(len(words))]) if not hasattr(words, "sizes") \
            else np.asarray(words.sizes) + 2

    def __getitem__(self, i):
        item = {"id": i, "words": self.words[i], "tags": self.tags[i], "chars": self.chars[i]}
        if self.text is not None:
            item["text"] = self.text[i]
        if self.spans is not None:
            item["spans"] = self.spans[i]
        if self.heads is not None:
            item["heads"], item["rels"] = self.heads[i], self.rels[i]
        return item

    def collater(self, samples):
        return collate(samples, self.dicts, self.subwords)


def encode_sentence(words: Sequence[str], tags: Optional[Sequence[str]], dicts) -> dict:
    """One raw sentence -> a dataset item (for parsing text: fairseq-tree-parse, the pipeline backend).
    Without tags every tag is the tag dictionary's unk (use a model trained ``--no-pos-tags``)."""
    wd, td, cd = dicts["words"], dicts["tags"], dicts["chars"]
    chars = []
    for w in words:
        chars += [cd.index(c) for c in word_chars(w)] + [cd.eos()]
    return {"id": 0, "words": torch.tensor([wd.index(w) for w in words]),
            "tags": torch.tensor([td.index(t) for t in tags] if tags is not None else [td.unk()] * len(words)),
            "chars": torch.tensor(chars), "text": list(words)}


def collate(samples: List[dict], dicts, subwords: Optional[Callable] = None) -> dict:
    """``subwords(sentences as word lists, T) -> {pt_*: tensor}`` (a pretrained encoder's input) or None."""
    if not samples:
        return {}
    wd, td, cd = dicts["words"], dicts["tags"], dicts["chars"]
    B = len(samples)
    lens = [len(s["words"]) for s in samples]
    n = max(lens)
    T = n + 2
    tokens = torch.full((B, T), wd.pad(), dtype=torch.long)
    tags = torch.full((B, T), td.pad(), dtype=torch.long)
    per_word: List[List[List[int]]] = []
    for b, s in enumerate(samples):
        nb = lens[b]
        tokens[b, 0], tokens[b, nb + 1] = wd.bos(), wd.eos()
        tokens[b, 1:nb + 1] = s["words"]
        tags[b, 0], tags[b, nb + 1] = td.bos(), td.eos()
        tags[b, 1:nb + 1] = s["tags"]
        flat = s["chars"].tolist()
        wordsc, cur = [[cd.bos()]], []
        for c in flat:
            if c == cd.eos():
                wordsc.append(cur or [cd.unk()])
                cur = []
            else:
                cur.append(c)
        wordsc.append([cd.eos()])
        per_word.append(wordsc)
    C = max(len(w) for ws in per_word for w in ws)
    chars = torch.full((B, T, C), cd.pad(), dtype=torch.long)
    for b, ws in enumerate(per_word):
        for t, w in enumerate(ws):
            chars[b, t, :len(w)] = torch.tensor(w)
    batch = {
        "id": torch.tensor([s["id"] for s in samples]), "nsentences": B, "ntokens": sum(lens),
        "net_input": {"src_tokens": tokens, "src_tags": tags, "src_chars": chars,
                      "src_lengths": torch.tensor(lens)},
    }
    if subwords is not None:
        if any("text" not in s for s in samples):
            raise ValueError("a pretrained-encoder model needs the words as strings: this data directory has no "
                             "{split}.text.jsonl (written by fairseq-tree-parsing-data since the pretrained encoder "
                             "was added): binarize the treebanks again")
        batch["net_input"].update(subwords([s["text"] for s in samples], T))
    if "spans" in samples[0]:
        ld = dicts["labels"]
        gold = [[(i, j, lab - ld.nspecial) for i, j, lab in s["spans"].view(-1, 3).tolist()] for s in samples]
        batch["gold_spans"], batch["gold_chart"] = gold, spans_to_chart(gold, n)
    if "heads" in samples[0]:
        rd = dicts["rels"]
        heads = torch.zeros(B, n + 1, dtype=torch.long)
        rels = torch.zeros(B, n + 1, dtype=torch.long)
        for b, s in enumerate(samples):
            heads[b, 1:lens[b] + 1] = s["heads"]
            rels[b, 1:lens[b] + 1] = s["rels"] - rd.nspecial
        batch["heads"], batch["rels"] = heads, rels
    return batch
