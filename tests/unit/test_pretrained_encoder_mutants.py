"""``--pretrained-encoder``'s chunk length (fairseq_tree/modules/pretrained_encoder.py): without
``--pretrained-max-length`` a sentence is cut into chunks that fit the encoder's position table, the smallest of its
limits, so a sentence longer than the table still gets a vector per word; and its train / eval modes. Bugs of one
line that tests/unit/test_lal_pretrained.py let through (scripts/mutation/, docs/development.md)."""

import pytest
import torch

pytest.importorskip("transformers")

from tiny_pretrained import save_tiny_bert  # noqa: E402

from fairseq_tree.modules.pretrained_encoder import (  # noqa: E402
    PretrainedWordEncoder,
    default_max_length,
    load_pretrained,
)

torch.set_num_threads(1)


def test_a_sentence_longer_than_the_position_table_is_encoded_in_chunks_that_fit(tmp_path):
    """A tiny BERT with 64 positions and a tokenizer that names no limit of its own (transformers' "very large"
    default): chunks of at most 64 subwords ([CLS] + 62 words + [SEP]), and a 100-word sentence gets 100 word
    vectors plus BOS and EOS."""
    encoder, archive = load_pretrained(str(save_tiny_bert(tmp_path / "bert", ["The", "cat", "sat"])))
    assert encoder.config.max_position_embeddings == 64
    pt = PretrainedWordEncoder(encoder, archive, d_out=8).eval()
    tokenizer = pt.batcher().tokenizer
    assert tokenizer.model_max_length > 10 ** 9 and default_max_length(encoder, tokenizer) == 64
    words = ["The", "cat", "sat"] * 33 + ["The"]
    T = len(words) + 2
    batch = pt.batcher()([words], T)
    assert batch["pt_tokens"].shape == (2, 64) and batch["pt_mask"].sum().item() == 100 + 2 * 2
    assert (batch["pt_first"] >= 0).all()  # every token, BOS and EOS included, has a subword
    with torch.no_grad():
        out = pt(1, T, **batch)
    assert out.shape == (1, T, 8) and torch.isfinite(out).all()


def test_train_and_eval_modes_of_a_frozen_and_a_trained_encoder(tmp_path):
    """module.train() (no argument: training) turns dropout on in a fine-tuned encoder; a frozen one stays in eval
    mode (no dropout) whatever its parent asks."""
    d = save_tiny_bert(tmp_path / "bert", ["The", "cat"])
    for freeze in (False, True):
        encoder, archive = load_pretrained(str(d))
        pt = PretrainedWordEncoder(encoder, archive, d_out=8, freeze=freeze).eval()
        assert pt.train() is pt and pt.training and pt.encoder.training is not freeze
        pt.eval()
        assert not pt.training and not pt.encoder.training


def test_the_chunk_length_is_the_smallest_limit_that_is_set(tmp_path):
    """The encoder's position table, the tokenizer's model_max_length and 512: the smallest; XLNet has no table
    (relative positions: its config says -1)."""
    from transformers import AutoTokenizer, XLNetConfig, XLNetModel

    d = save_tiny_bert(tmp_path / "bert", ["The", "cat"])
    bert, _ = load_pretrained(str(d))
    xlnet = XLNetModel(XLNetConfig(d_model=32, n_layer=1, n_head=2, d_inner=64, vocab_size=10))
    assert xlnet.config.max_position_embeddings == -1
    unset, forty, thousand = (AutoTokenizer.from_pretrained(str(d), **kw) for kw in
                              ({}, {"model_max_length": 40}, {"model_max_length": 1000}))
    assert [default_max_length(bert, t) for t in (unset, forty, thousand)] == [64, 40, 64]
    assert [default_max_length(xlnet, t) for t in (unset, forty, thousand)] == [512, 40, 512]


def test_without_transformers_the_error_names_the_extra_to_install(tmp_path, monkeypatch):
    """transformers is an optional extra: where it is not installed (its import fails), --pretrained-encoder says
    which extra to install, instead of failing later on a name that is not defined."""
    import sys

    d = save_tiny_bert(tmp_path / "bert", ["The", "cat"])
    monkeypatch.setitem(sys.modules, "transformers", None)  # what Python does for a package that is not there
    with pytest.raises(ImportError, match=r"--pretrained-encoder needs transformers: pip install "
                                          r"'fairseq-tree\[pretrained\]'"):
        load_pretrained(str(d))
