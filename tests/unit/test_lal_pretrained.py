"""lal_parser --pretrained-encoder with real transformers models (tiny random BERT / XLNet saved to a temporary
directory and loaded back through the flag): subword offsets and pooling against hand-made cases, long sentences
split and rejoined, batch invariance, the frozen flag, the checkpoint round trip, --pretrained-lr's step."""

import argparse
import json

import pytest
import torch
from conftest import SHARED

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from tiny_pretrained import SPLIT_WORD, save_tiny_bert, save_tiny_xlnet  # noqa: E402

from fairseq_tree.data.parsing_data import binarize, get_parser  # noqa: E402
from fairseq_tree.data.subwords import SubwordBatcher  # noqa: E402
from fairseq_tree.models.lal_parser import LALParserModel, lal_parser_tiny  # noqa: E402
from fairseq_tree.tasks.constituency_parsing import (  # noqa: E402
    ConstituencyParsingConfig,
    ConstituencyParsingTask,
    pretrained_lr_step,
)

PTB = SHARED / "data" / "ptb_sample"
ZWSP = "\u200b"  # BERT's normaliser strips it: a word of no subword


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    if not (PTB / "train.mrg").is_file():
        pytest.skip(f"{PTB} not found")
    d = tmp_path_factory.mktemp("lal_pt")
    lines = (PTB / "train.mrg").read_text(encoding="utf-8").splitlines()[:12]
    (d / "t.mrg").write_text("\n".join(lines) + "\n", encoding="utf-8")
    binarize(get_parser().parse_args(["--destdir", str(d / "bin"), "--train", str(d / "t.mrg")]))
    sentences = [json.loads(x) for x in (d / "bin" / "train.text.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(sentences) == 12
    words = {w for s in sentences for w in s} | {"The", "cat", "sat"}
    return {"bin": d / "bin", "sentences": sentences, "bert": save_tiny_bert(d / "bert", words),
            "xlnet": save_tiny_xlnet(d / "xlnet", sentences + [["The", "cat", "sat", SPLIT_WORD]] * 5)}


def _task(data):
    return ConstituencyParsingTask.setup_task(ConstituencyParsingConfig(data=str(data["bin"])))


def _model(data, task, which="bert", **over):
    args = argparse.Namespace(arch="lal_parser_tiny", pretrained_encoder=str(data[which]), **over)
    lal_parser_tiny(args)
    torch.manual_seed(0)
    model = task.build_model(args)
    assert isinstance(model, LALParserModel)
    return model.eval()


def _bert_tokenizer(data):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(data["bert"]))


def test_offsets_of_a_three_subword_word_and_a_word_of_none(data):
    tok = _bert_tokenizer(data)
    vocab = tok.get_vocab()
    assert SPLIT_WORD not in vocab and ZWSP not in vocab
    batcher = SubwordBatcher(tok, 512)
    sents = [["The", SPLIT_WORD, ZWSP, "cat"], ["cat", "sat"]]
    T = 6  # 4 words + BOS + EOS
    out = batcher(sents, T)
    cls, sep, pad = vocab["[CLS]"], vocab["[SEP]"], vocab["[PAD]"]
    assert out["pt_tokens"].tolist() == [
        [cls, vocab["The"], vocab["un"], vocab["##bel"], vocab["##ievably"], vocab["cat"], sep],
        [cls, vocab["cat"], vocab["sat"], sep, pad, pad, pad]]
    assert out["pt_mask"].tolist() == [[1] * 7, [1, 1, 1, 1, 0, 0, 0]]
    # token (b, t) as b * T + t: BOS = [CLS], the split word's three pieces -> token 2, ZWSP (token 3) has none
    assert out["pt_word"].tolist() == [[0, 1, 2, 2, 2, 4, 5], [6, 7, 8, 9, -1, -1, -1]]
    S = 7
    assert out["pt_first"].tolist() == [[0, 1, 2, -1, 5, 6], [S + 0, S + 1, S + 2, S + 3, -1, -1]]
    assert out["pt_last"].tolist() == [[0, 1, 4, -1, 5, 6], [S + 0, S + 1, S + 2, S + 3, -1, -1]]


@pytest.mark.parametrize("pooling", ["first", "last", "mean"])
def test_pooling_against_the_encoders_own_states(data, pooling):
    task = _task(data)
    model = _model(data, task, pretrained_pooling=pooling)
    pt = model.pretrained
    with torch.no_grad():
        pt.empty.copy_(torch.randn_like(pt.empty))  # the learned vector of a word with no subword
        sents = [["The", SPLIT_WORD, ZWSP, "cat"], ["cat", "sat"]]
        batch = task.build_batch(sents)
        net = batch["net_input"]
        B, T = net["src_tokens"].shape
        got = model.extra_content(net["src_tokens"], **{k: v for k, v in net.items() if k.startswith("pt_")})
        # [CLS] The un ##bel ##ievably cat [SEP]
        hid = pt.encoder(input_ids=net["pt_tokens"][:1, :7]).last_hidden_state[0]
        split = {"first": hid[2], "last": hid[4], "mean": hid[2:5].mean(0)}[pooling]
        want = torch.stack([hid[0], hid[1], split, pt.empty, hid[5], hid[6]])
        assert torch.allclose(got[0], pt.proj(want), atol=1e-5)
        hid1 = pt.encoder(input_ids=net["pt_tokens"][1:, :4]).last_hidden_state[0]  # [CLS] cat sat [SEP]
        want1 = torch.stack([hid1[0], hid1[1], hid1[2], hid1[3], pt.empty, pt.empty])  # then padding
        assert torch.allclose(got[1], pt.proj(want1), atol=1e-5)


def test_long_sentence_split_at_word_boundaries_and_rejoined(data):
    task = _task(data)
    model = _model(data, task, pretrained_max_length=6)  # 4 subwords + [CLS] [SEP] per encoder row
    pt = model.pretrained
    words = ["The", "cat", SPLIT_WORD, "sat", "The", "cat", "sat"]  # 1 1 3 1 1 1 1 subwords
    net = task.build_batch([words])["net_input"]
    vocab = _bert_tokenizer(data).get_vocab()
    v = [vocab[x] for x in ("[CLS]", "The", "cat", "un", "##bel", "##ievably", "sat", "[SEP]", "[PAD]")]
    cls, the, cat, un, bel, iev, sat, sep, pad = v
    # greedy at word boundaries: [The cat] [unbelievably sat] [The cat sat]; nothing dropped
    assert net["pt_tokens"].tolist() == [[cls, the, cat, sep, pad, pad], [cls, un, bel, iev, sat, sep],
                                         [cls, the, cat, sat, sep, pad]]
    T = len(words) + 2
    assert net["pt_word"].tolist() == [[0, 1, 2, -1, -1, -1], [-1, 3, 3, 3, 4, -1], [-1, 5, 6, 7, T - 1, -1]]
    with torch.no_grad():
        got = model.extra_content(net["src_tokens"], **{k: v for k, v in net.items() if k.startswith("pt_")})[0]
        rows = [pt.encoder(input_ids=torch.tensor([r])).last_hidden_state[0] for r in
                ([cls, the, cat, sep], [cls, un, bel, iev, sat, sep], [cls, the, cat, sat, sep])]
        want = torch.stack([rows[0][0], rows[0][1], rows[0][2], rows[1][1], rows[1][4], rows[2][1], rows[2][2],
                            rows[2][3], rows[2][4]])
        assert torch.allclose(got, pt.proj(want), atol=1e-5)
        spans, heads, _, _ = model.parse(net)  # the parser reads all 7 words
        assert max(e for _, e, _ in spans[0]) == 7


@pytest.mark.parametrize("which,pooling", [("bert", "first"), ("xlnet", "last"), ("bert", "mean")])
def test_batch_invariance(data, which, pooling):
    task = _task(data)
    model = _model(data, task, which, pretrained_pooling=pooling)
    task.load_dataset("train")
    ds = task.datasets["train"]
    assert ds.subwords is not None
    idx = [3, 0, 7, 11]
    batch = ds.collater([ds[i] for i in idx])
    with torch.no_grad():
        full = model(**batch["net_input"])
        spans, heads, rels, _ = model.parse(batch["net_input"])
        for b, i in enumerate(idx):
            one = ds.collater([ds[i]])
            alone = model(**one["net_input"])
            n = len(ds[i]["words"])
            assert torch.allclose(full["label_scores"][b, :n + 1, :n + 1], alone["label_scores"][0], atol=1e-4)
            assert torch.allclose(full["arc_scores"][b, :n + 1, :n + 1], alone["arc_scores"][0], atol=1e-4)
            s1, h1, r1, _ = model.parse(one["net_input"])
            assert spans[b] == s1[0]
            assert heads[b, :n + 1].tolist() == h1[0].tolist() and rels[b, 1:n + 1].tolist() == r1[0, 1:].tolist()


def test_frozen_encoder_gets_no_gradient_and_no_dropout(data):
    task = _task(data)
    model = _model(data, task, pretrained_freeze=True).train()
    enc = model.pretrained.encoder
    assert not enc.training and model.training and model.pretrained.proj.training
    assert all(not p.requires_grad for p in enc.parameters())
    assert model.pretrained_parameters() and all(not p.requires_grad for p in model.pretrained_parameters())
    net = task.build_batch([["The", "cat", "sat"]])["net_input"]
    model(**net)["label_scores"].sum().backward()
    assert all(p.grad is None for p in enc.parameters())
    assert model.pretrained.proj.weight.grad is not None and model.pretrained.proj.weight.grad.abs().sum() > 0
    # not frozen: the encoder does get gradients
    t2 = _task(data)
    model2 = _model(data, t2).train()
    model2(**t2.build_batch([["The", "cat", "sat"]])["net_input"])["label_scores"].sum().backward()
    assert model2.pretrained.encoder.embeddings.word_embeddings.weight.grad.abs().sum() > 0


def test_replace_words_drops_word_and_char_embeddings(data):
    task = _task(data)
    model = _model(data, task, pretrained_replace_words=True)
    assert model.embed_words is None and model.chars is None and model.embed_tags is not None
    with pytest.raises(ValueError, match="needs --pretrained-encoder"):
        args = argparse.Namespace(pretrained_replace_words=True)
        lal_parser_tiny(args)
        LALParserModel(args, task.dicts, task.num_labels, task.num_relations)
    # the content is the tag embedding + the pretrained vector: two words the dictionary does not know (both
    # <unk>, same tags) still read differently, through their strings
    wd = task.dicts["words"]
    assert wd.index("cat") == wd.index(SPLIT_WORD) == wd.unk()
    net = task.build_batch([["The", "cat", "sat"], ["The", SPLIT_WORD, "sat"]])["net_input"]
    assert torch.equal(net["src_tokens"][0], net["src_tokens"][1])
    assert torch.equal(net["src_tags"][0], net["src_tags"][1])
    with torch.no_grad():
        h, _, _ = model.encode(net["src_tokens"], net["src_tags"], net["src_chars"],
                               **{k: v for k, v in net.items() if k.startswith("pt_")})
    assert not torch.allclose(h[0], h[1])


def test_checkpoint_round_trip_keeps_config_as_json_and_tokenizer_as_bytes(data, tmp_path):
    task = _task(data)
    model = _model(data, task, which="xlnet")
    args = model.args
    assert isinstance(args.pretrained_config, str) and json.loads(args.pretrained_config)["model_type"] == "xlnet"
    state = model.state_dict()
    assert all(isinstance(v, torch.Tensor) for v in state.values())
    assert state["pretrained.tokenizer_archive"].dtype == torch.uint8 and state["pretrained.tokenizer_archive"].numel()
    path = tmp_path / "m.pt"
    torch.save({"model": state, "args": vars(args)}, path)
    loaded = torch.load(path, weights_only=True)  # plain data only
    # rebuilt from the config alone (the model directory gone), then the state dict brings weights and tokenizer
    args2 = argparse.Namespace(**loaded["args"])
    args2.pretrained_encoder = "/nonexistent/xlnet"
    task2 = _task(data)
    model2 = task2.build_model(args2)
    model2.load_state_dict(loaded["model"])
    model2.eval()
    sents = [["The", "cat", "sat"], data["sentences"][0]]
    with torch.no_grad():
        a = model(**task.build_batch(sents)["net_input"])
        b = model2(**task2.build_batch(sents)["net_input"])
    assert torch.equal(a["label_scores"], b["label_scores"]) and torch.equal(a["arc_scores"], b["arc_scores"])


class _SGDWrapper:
    """fairseq's FairseqOptimizer shape: .optimizer is the torch optimizer, step() steps it."""

    def __init__(self, params, lr):
        self.optimizer = torch.optim.SGD(params, lr=lr)

    def step(self):
        self.optimizer.step()


def test_pretrained_lr_steps_the_encoder_at_its_own_rate():
    enc, rest = torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))
    opt = _SGDWrapper([enc, rest], lr=0.1)
    enc.grad, rest.grad = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, -1.0])
    pretrained_lr_step(opt, [enc], ratio=0.01)  # SGD: p -= lr * grad
    assert torch.allclose(enc.detach(), torch.tensor([-0.001, -0.002, -0.003]))
    assert torch.allclose(rest.detach(), torch.tensor([-0.1, 0.1]))
    # fairseq's single group is back, with the schedule's lr untouched
    assert len(opt.optimizer.param_groups) == 1 and opt.optimizer.param_groups[0]["lr"] == 0.1
    assert [id(p) for p in opt.optimizer.param_groups[0]["params"]] == [id(enc), id(rest)]
