"""Which special token stands for the LAL parser's BOS and EOS (fairseq_tree/data/subwords.py) with a tokenizer that
puts its specials after the sentence in the order ``<sep> <cls>`` (XLNet): BOS is the ``<cls>`` vector, EOS the
``<sep>`` one, as the LAL authors' code feeds START / STOP. A bug of one line that tests/unit/test_lal_pretrained.py
let through: with BERT ([CLS] first, [SEP] last) "first special = BOS" is right by chance (scripts/mutation/,
docs/development.md)."""

import pytest

pytest.importorskip("transformers")

from tiny_pretrained import save_tiny_xlnet  # noqa: E402

from fairseq_tree.data.subwords import SubwordBatcher  # noqa: E402


def test_xlnets_cls_is_bos_and_its_sep_is_eos(tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(save_tiny_xlnet(tmp_path / "xlnet", [["The", "cat", "sat"]] * 20)))
    sents, T = [["The", "cat", "sat"], ["cat"]], 5
    out = SubwordBatcher(tok, 512)(sents, T)
    S = out["pt_tokens"].size(1)
    for b, words in enumerate(sents):
        pieces = tok.convert_ids_to_tokens(out["pt_tokens"][b].tolist())
        n = out["pt_mask"][b].sum().item()
        assert pieces[n - 2:n] == ["<sep>", "<cls>"] and set(pieces[n:]) <= {"<pad>"}
        word = out["pt_word"][b].tolist()
        assert (word[n - 1], word[n - 2]) == (b * T, b * T + len(words) + 1)  # <cls> -> BOS, <sep> -> EOS
        assert out["pt_first"][b, 0] == b * S + n - 1 and out["pt_first"][b, len(words) + 1] == b * S + n - 2
        assert sorted(set(word[:n - 2])) == [b * T + t for t in range(1, len(words) + 1)]  # every word has pieces
