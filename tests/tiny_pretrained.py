"""Tiny random HuggingFace encoders with their tokenizers, built offline and saved with ``save_pretrained`` (what
``--pretrained-encoder DIR`` reads): BERT (a WordPiece vocabulary written by hand) and XLNet (a sentencepiece
model trained on the given text). 2 layers, width 32. Needs transformers and sentencepiece (requirements-dev)."""

from pathlib import Path
from typing import Iterable, List, Sequence

#: pieces that make "unbelievably" three subwords (the word itself is kept out of the vocabulary)
SPLIT_WORD, SPLIT_PIECES = "unbelievably", ["un", "##bel", "##ievably"]
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def bert_vocab(words: Iterable[str]) -> List[str]:
    return BERT_SPECIALS + sorted(set(words) - set(BERT_SPECIALS) - {SPLIT_WORD}) + SPLIT_PIECES


def save_tiny_bert(d: Path, words: Iterable[str], seed: int = 0) -> Path:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    vocab = bert_vocab(words)
    tokenizer = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=False)
    torch.manual_seed(seed)
    model = BertModel(BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                 vocab_size=len(vocab), max_position_embeddings=64))
    d.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(d))
    model.save_pretrained(str(d))
    return d


def save_tiny_xlnet(d: Path, sentences: Sequence[Sequence[str]], seed: int = 0) -> Path:
    import sentencepiece as spm
    import torch
    from transformers import XLNetConfig, XLNetModel, XLNetTokenizer

    d.mkdir(parents=True, exist_ok=True)
    (d / "spm.txt").write_text("\n".join(" ".join(s) for s in sentences) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(d / "spm.txt"), model_prefix=str(d / "spm"), vocab_size=200, hard_vocab_limit=False,
        model_type="unigram", character_coverage=1.0, unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2,
        user_defined_symbols=["<sep>", "<cls>", "<pad>", "<mask>", "<eod>", "<eop>"])
    sp = spm.SentencePieceProcessor(model_file=str(d / "spm.model"))
    vocab = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    tokenizer = XLNetTokenizer(vocab=vocab, unk_id=0)
    torch.manual_seed(seed)
    model = XLNetModel(XLNetConfig(d_model=32, n_layer=2, n_head=2, d_inner=64, vocab_size=len(vocab)))
    for f in ("spm.txt", "spm.model", "spm.vocab"):
        (d / f).unlink()
    tokenizer.save_pretrained(str(d))
    model.save_pretrained(str(d))
    return d
