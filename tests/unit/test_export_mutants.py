"""Portable model folders (fairseq_tree/inference/export.py) without training a model: how a folder's checkpoint and
data are found from any working directory (fairseq's rule: ``./x`` is relative to the model folder), and what
``fairseq-tree-export`` writes for a checkpoint as fairseq-train saves it (its config as plain containers, the
fields export reads). Bugs of one line that tests/integration/test_cli_hub_contract.py let through
(scripts/mutation/, docs/development.md)."""

import json
import os

import pytest
import torch

from fairseq_tree import safe_loading
from fairseq_tree.inference.export import export, model_card, resolve_data, resolve_folder


def _checkpoint(path, task, data, arch, **task_cfg):
    """A checkpoint as fairseq-train writes it: 10 parameters, 7 updates, an optimizer state."""
    state = {"cfg": {"task": {"_name": task, "data": str(data), **task_cfg},
                     "model": {"_name": arch, "arch": arch, "dropout": 0.1, "layers": [2, 2]}},
             "model": {"w": torch.ones(2, 3), "b": torch.zeros(4)},
             "optimizer_history": [{"num_updates": 3}, {"num_updates": 7}],
             "last_optimizer_state": {"state": {0: torch.ones(2)}}}
    torch.save(state, path)
    return path


def _data_bin(d, *names):
    d.mkdir()
    for name in names:
        (d / name).write_text(f"{name} 1\n", encoding="utf-8")
    return d


@pytest.fixture
def translation(tmp_path):
    """A translation checkpoint that records no languages, and its data-bin (dictionaries, BPE codes, splits)."""
    data = _data_bin(tmp_path / "bin", "dict.en.txt", "dict.de.txt", "dict.en.labels.txt", "bpe.codes",
                     "train.en-de.en.bin", "train.en-de.en.idx", "preprocess.json")
    ckpt = _checkpoint(tmp_path / "checkpoint_best.pt", "tree_translation", data, "tree2seq_tiny",
                       source_lang=None, target_lang=None)
    return ckpt, data


def test_dot_paths_are_relative_to_the_model_folder_from_any_working_directory(tmp_path, monkeypatch):
    model = tmp_path / "models" / "m1"
    model.mkdir(parents=True)
    (model / "checkpoint_best.pt").write_bytes(b"")
    monkeypatch.chdir(tmp_path / "models")
    assert resolve_data("m1", "./bin") == str(tmp_path / "models" / "m1" / "bin")
    assert resolve_data(str(model), "../shared-bin") == str(tmp_path / "models" / "shared-bin")
    assert resolve_data("m1", "bin") == "bin"  # no dot: as given (relative to the working directory)
    assert resolve_data("m1", None) is None  # not exported: the checkpoint's own
    assert resolve_folder("m1", None, "./bin") == (os.path.join("m1", "checkpoint_best.pt"),
                                                   str(tmp_path / "models" / "m1" / "bin"))
    with pytest.raises(FileNotFoundError, match=r"m1/checkpoint_last\.pt: no such checkpoint"):
        resolve_folder("m1", "checkpoint_last.pt", None)


def test_export_writes_a_folder_that_needs_nothing_else(translation, tmp_path, monkeypatch):
    ckpt, data = translation
    card = export(str(ckpt), str(tmp_path / "out"), scores={"bleu": 12.5})
    out = tmp_path / "out"
    files = ["model.pt", "bpe.codes", "dict.de.txt", "dict.en.labels.txt", "dict.en.txt"]
    assert sorted(os.listdir(out)) == sorted(files + ["model_card.json"])
    assert card == json.loads((out / "model_card.json").read_text()) == model_card(str(out))
    assert card == {"task": "tree_translation", "arch": "tree2seq_tiny", "parameters": 10,
                    "exported_from": str(ckpt), "training_data": str(data), "updates": 7,
                    "flags": {"task": {"_name": "tree_translation", "data": str(data), "source_lang": "en",
                                       "target_lang": "de"},
                              "model": {"_name": "tree2seq_tiny", "arch": "tree2seq_tiny", "dropout": 0.1}},
                    "files": files, "scores": {"bleu": 12.5}}
    state = safe_loading.load(out / "model.pt")
    assert state["cfg"]["task"] == {"_name": "tree_translation", "data": ".", "source_lang": "en",
                                    "target_lang": "de"}  # the languages from the training files' names
    assert state["last_optimizer_state"] is None and torch.equal(state["model"]["w"], torch.ones(2, 3))
    # the folder, moved, from another working directory: model.pt and the folder itself as the data
    os.rename(out, tmp_path / "moved")
    monkeypatch.chdir(data)
    assert resolve_folder(str(tmp_path / "moved"), None, None) == (str(tmp_path / "moved" / "model.pt"),
                                                                    str(tmp_path / "moved"))
    assert model_card(str(data)) == {}


def test_keep_optimizer_and_a_second_export_into_the_same_folder(translation, tmp_path):
    ckpt, _ = translation
    stanza = _data_bin(tmp_path / "stanza", "en_tagger.pt", "en_parser.pt")
    for _ in range(2):  # rerunning the same command replaces the folder's files
        card = export(str(ckpt), str(tmp_path / "out"), keep_optimizer=True, parser=str(stanza))
    assert card["parser"] == {"backend": "stanza", "path": "parser"}
    assert sorted(os.listdir(tmp_path / "out" / "parser")) == ["en_parser.pt", "en_tagger.pt"]
    state = safe_loading.load(tmp_path / "out" / "model.pt")
    assert torch.equal(state["last_optimizer_state"]["state"][0], torch.ones(2))


def test_a_parser_checkpoint_is_exported_into_parser(translation, tmp_path):
    ckpt, _ = translation
    lal_bin = _data_bin(tmp_path / "lal_bin", "dict.label.txt", "dict.tag.txt", "dict.word.txt")
    lal = _checkpoint(tmp_path / "lal.pt", "constituency_parsing", lal_bin, "lal_parser_tiny")
    card = export(str(ckpt), str(tmp_path / "out"), parser=str(lal))
    assert card["parser"] == {"backend": "lal", "path": "parser", "arch": "lal_parser_tiny"}
    parser = tmp_path / "out" / "parser"
    assert sorted(os.listdir(parser)) == ["dict.label.txt", "dict.tag.txt", "dict.word.txt", "model.pt",
                                          "model_card.json"]
    assert model_card(str(parser))["task"] == "constituency_parsing"
    assert safe_loading.load(tmp_path / "out" / "model.pt")["cfg"]["task"]["_name"] == "tree_translation"
    with pytest.raises(ValueError, match=r"a 'tree_translation' checkpoint is no parser"):
        export(str(ckpt), str(tmp_path / "out2"), parser=str(ckpt))


def test_missing_data_names_the_option(translation, tmp_path):
    ckpt, data = translation
    with pytest.raises(FileNotFoundError, match=r"not a directory here: pass --data DIR"):
        export(str(ckpt), str(tmp_path / "out"), data=str(tmp_path / "nowhere"))
    empty = _data_bin(tmp_path / "empty", "train.en-de.en.bin")
    with pytest.raises(FileNotFoundError, match=r"no dictionaries"):
        export(str(ckpt), str(tmp_path / "out"), data=str(empty))
