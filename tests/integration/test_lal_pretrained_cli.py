"""lal_parser --pretrained-encoder end to end through the real CLIs: fairseq-train a few updates with a tiny random
BERT (own learning rate) and XLNet (frozen, last-subword pooling, replacing the word embeddings) saved to a
temporary directory; the model directory is then deleted, and fairseq-tree-parse, the hub interface and the
pipeline's ``lal`` backend parse from the checkpoint alone (weights, config and tokenizer travel in it)."""

import json
import shutil

import pytest
import torch
from conftest import BIN, REPO, SHARED, assert_safe_checkpoint
from conftest import run_command as _run

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from tiny_pretrained import SPLIT_WORD, save_tiny_bert, save_tiny_xlnet  # noqa: E402

pytestmark = pytest.mark.slow(minutes=1.5)  # measured: 76 s on the busy 2-core box, one process

PTB = SHARED / "data" / "ptb_sample"
N = 16


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    if not (PTB / "train.mrg").is_file():
        pytest.skip(f"{PTB} not found")
    d = tmp_path_factory.mktemp("lal_pt_cli")
    mrg = (PTB / "train.mrg").read_text(encoding="utf-8").splitlines()
    blocks = [b for b in (PTB / "train.conllu").read_text(encoding="utf-8").split("\n\n") if b.strip()]
    sel = [i for i, b in enumerate(blocks)
           if 5 <= sum(1 for line in b.splitlines() if not line.startswith("#")) <= 15][:N]
    (d / "t.mrg").write_text("\n".join(mrg[i] for i in sel) + "\n", encoding="utf-8")
    (d / "t.conllu").write_text("\n\n".join(blocks[i] for i in sel) + "\n\n", encoding="utf-8")
    _run(BIN / "python", "-m", "fairseq_tree.data.parsing_data", "--destdir", d / "bin", "--train", d / "t.mrg",
         "--train-dep", d / "t.conllu", "--valid", d / "t.mrg", "--valid-dep", d / "t.conllu")
    sentences = [json.loads(x) for x in (d / "bin" / "train.text.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(sentences) == N
    return d, sentences


def _train(d, save, *extra):
    _run(BIN / "fairseq-train", d / "bin", "--user-dir", REPO / "fairseq_tree", "--task", "constituency_parsing",
         "--arch", "lal_parser_tiny", "--criterion", "span_hinge_dependency", "--optimizer", "adam", "--lr", "2e-3",
         "--batch-size", "8", "--max-update", "4", "--cpu", "--seed", "1", "--save-dir", save,
         "--no-epoch-checkpoints", "--log-format", "simple", "--num-workers", "0", *extra)
    return save / "checkpoint_last.pt"


def _encoder_state(model_dir):
    from transformers import AutoModel

    return {k: v.clone() for k, v in AutoModel.from_pretrained(str(model_dir)).state_dict().items()}


def _parse_and_check(d, ckpt, sentences):
    out = _run(BIN / "fairseq-tree-parse", "--path", ckpt, "--input", d / "t.mrg", "--gold", d / "t.mrg",
               "--gold-dep", d / "t.conllu", "--output", d / "out" / ckpt.parent.name)
    scores = json.loads(out.stdout.strip().splitlines()[-1])
    assert scores["sentences"] == N and 0 <= scores["f1"] <= 100
    trees = (d / "out" / f"{ckpt.parent.name}.trees").read_text(encoding="utf-8").splitlines()
    assert len(trees) == N
    # the hub interface, from the model folder (fairseq's from_pretrained), and the pipeline's lal backend
    from fairseq_tree.models.lal_parser import LALParserModel
    from fairseq_tree.parsers.lal_parser import LALBackend

    hub = LALParserModel.from_pretrained(str(ckpt.parent), checkpoint_file=ckpt.name, unknown_tags=True)  # tag model
    raw = [["The", "cat", "sat", "."], [SPLIT_WORD, "\u200b", "cat", "."]]
    parsed = hub.parse(raw)
    assert len(parsed) == 2
    brackets = LALBackend(str(ckpt), unknown_tags=True).parse_batch(raw)
    assert len(brackets) == 2 and all(b.startswith("(") for b in brackets)
    return scores


def test_bert_trains_with_its_own_lr_and_parses_without_its_directory(data, tmp_path):
    d, sentences = data
    bert = save_tiny_bert(tmp_path / "bert", {w for s in sentences for w in s} | {"The", "cat", "sat"})
    before = _encoder_state(bert)
    ckpt = _train(d, tmp_path / "ckpt_bert", "--pretrained-encoder", bert, "--pretrained-lr", "1e-3",
                  "--pretrained-max-length", "12")  # short chunks: most sentences are split and rejoined
    state = assert_safe_checkpoint(ckpt)
    args = state["args"] if state.get("args") is not None else state["cfg"]["model"]
    assert json.loads(args.pretrained_config)["model_type"] == "bert"
    enc = {k[len("pretrained.encoder."):]: v for k, v in state["model"].items() if k.startswith("pretrained.encoder.")}
    assert set(before) <= set(enc)
    assert any(not torch.equal(before[k], enc[k]) for k in before)  # fine-tuned
    shutil.rmtree(bert)  # the checkpoint alone must do
    _parse_and_check(d, ckpt, sentences)


def test_xlnet_frozen_last_pooling_replacing_words(data, tmp_path):
    d, sentences = data
    xlnet = save_tiny_xlnet(tmp_path / "xlnet", sentences + [["The", "cat", "sat", SPLIT_WORD]] * 3)
    before = _encoder_state(xlnet)
    ckpt = _train(d, tmp_path / "ckpt_xlnet", "--pretrained-encoder", xlnet, "--pretrained-freeze",
                  "--pretrained-pooling", "last", "--pretrained-replace-words")
    state = assert_safe_checkpoint(ckpt)
    model = state["model"]
    assert not any(k.startswith("embed_words") or k.startswith("chars.") for k in model)
    for k, v in before.items():  # frozen: the encoder's weights are the pretrained ones
        assert torch.equal(model["pretrained.encoder." + k], v), k
    shutil.rmtree(xlnet)
    _parse_and_check(d, ckpt, sentences)
