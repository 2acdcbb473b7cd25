"""The parsing collater (``--task constituency_parsing``'s batches) on a hand-made batch of two sentences: every
tensor of the docstring of ``fairseq_tree.data.parsing_dataset``, written out by hand."""

import torch
from fairseq.data import Dictionary

from fairseq_tree.data.parsing_dataset import collate, encode_sentence, spans_to_chart


def _dict(symbols):
    d = Dictionary()
    for s in symbols:
        d.add_symbol(s)
    return d


def test_collate_hand_computed():
    words, tags, chars = _dict(["the", "cat", "sat"]), _dict(["DT", "NN", "VBD"]), _dict(list("thecas"))
    labels, rels = _dict(["S", "NP"]), _dict(["det", "nsubj", "root"])
    dicts = {"words": words, "tags": tags, "chars": chars, "labels": labels, "rels": rels}
    s = 4  # nspecial: the id of each dictionary's first symbol
    a = encode_sentence(["the", "cat", "sat"], ["DT", "NN", "VBD"], dicts)
    b = encode_sentence(["cat"], None, dicts)
    a["spans"] = torch.tensor([0, 2, s + 1, 0, 3, s])  # NP 0-2, S 0-3
    b["spans"] = torch.tensor([0, 1, s + 1])  # NP 0-1
    a["heads"], a["rels"] = torch.tensor([2, 3, 0]), torch.tensor([s, s + 1, s + 2])
    b["heads"], b["rels"] = torch.tensor([0]), torch.tensor([s + 2])
    b["id"] = 7
    batch = collate([a, b], dicts)
    ni = batch["net_input"]
    bos, eos, pad, unk = 0, 2, 1, 3
    assert ni["src_tokens"].tolist() == [[bos, s, s + 1, s + 2, eos], [bos, s + 1, eos, pad, pad]]
    assert ni["src_tags"].tolist() == [[bos, s, s + 1, s + 2, eos], [bos, unk, eos, pad, pad]]  # no tags: unk
    assert ni["src_lengths"].tolist() == [3, 1] and batch["ntokens"] == 4 and batch["nsentences"] == 2
    assert batch["id"].tolist() == [0, 7]
    c = {ch: chars.index(ch) for ch in "thecas"}
    assert ni["src_chars"].shape == (2, 5, 3)
    assert ni["src_chars"][0].tolist() == [[bos, pad, pad], [c["t"], c["h"], c["e"]], [c["c"], c["a"], c["t"]],
                                           [c["s"], c["a"], c["t"]], [eos, pad, pad]]
    assert ni["src_chars"][1].tolist() == [[bos, pad, pad], [c["c"], c["a"], c["t"]], [eos, pad, pad],
                                           [pad] * 3, [pad] * 3]
    assert batch["gold_spans"] == [[(0, 2, 1), (0, 3, 0)], [(0, 1, 1)]]
    chart = torch.zeros(2, 4, 4, dtype=torch.long)
    chart[0, 0, 2], chart[0, 0, 3], chart[1, 0, 1] = 2, 1, 2
    assert torch.equal(batch["gold_chart"], chart)
    assert batch["heads"].tolist() == [[0, 2, 3, 0], [0, 0, 0, 0]]
    assert batch["rels"].tolist() == [[0, 0, 1, 2], [0, 2, 0, 0]]


def test_dataset_items_shuffle_and_subwords():
    """A dataset of 20 equal-length sentences with their text: training order is shuffled by default (within
    equal sizes, fairseq's convention), ``shuffle=False`` keeps the file's; items carry their words as strings,
    and the collater hands them with T to the pretrained encoder's ``subwords`` and adds what it returns."""
    import numpy as np

    from fairseq_tree.data.parsing_dataset import ParsingDataset

    words, tags, chars = _dict(["the", "cat"]), _dict(["DT", "NN"]), _dict(list("thecat"))
    dicts = {"words": words, "tags": tags, "chars": chars}
    items = [encode_sentence(["the", "cat"], ["DT", "NN"], dicts) for _ in range(20)]
    col = lambda k: [it[k] for it in items]  # noqa: E731
    text = [["the", "cat"]] * 19 + [["a", "dog"]]
    seen = []

    def subwords(sentences, T):
        seen.append((sentences, T))
        return {"pt_tokens": torch.ones(len(sentences), 3, dtype=torch.long)}

    ds = ParsingDataset(col("words"), col("tags"), col("chars"), None, None, None, dicts, text=text,
                        subwords=subwords)
    np.random.seed(0)
    assert sorted(ds.ordered_indices().tolist()) == list(range(20))
    np.random.seed(0)
    assert ds.ordered_indices().tolist() != list(range(20))
    fixed = ParsingDataset(col("words"), col("tags"), col("chars"), None, None, None, dicts, shuffle=False)
    assert fixed.ordered_indices().tolist() == list(range(20))
    assert ds[19]["text"] == ["a", "dog"] and "text" not in fixed[19]
    batch = ds.collater([ds[0], ds[19]])
    assert seen == [([["the", "cat"], ["a", "dog"]], 4)]
    assert batch["net_input"]["pt_tokens"].shape == (2, 3)


def test_spans_to_chart_hand_computed():
    """The batch's gold chart: class + 1 at (start, end), 0 elsewhere, long (the cost-augmented CKY's one-hot index)."""
    chart = spans_to_chart([[(0, 2, 0), (0, 3, 4)], [(1, 2, 1)]], 3)
    expect = torch.zeros(2, 4, 4, dtype=torch.long)
    expect[0, 0, 2], expect[0, 0, 3], expect[1, 1, 2] = 1, 5, 2
    assert chart.dtype == torch.long and torch.equal(chart, expect)
