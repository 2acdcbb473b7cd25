"""What a tool says when it is given the wrong checkpoint or a checkpoint whose data directory is gone
(fairseq_tree/inference/checkpoint.py), on checkpoints as fairseq saves and loads them (the hydra config as plain
containers or as OmegaConf; a pre-hydra one with ``args``), and a tiny real StructFormer checkpoint (built here, not
trained) loaded with another data directory and task options: bugs of one line that the CLI tests
(tests/integration/test_first_hour_paths.py) let through (scripts/mutation/, docs/development.md)."""

import argparse
import pickle

import pytest

from fairseq_tree.inference.checkpoint import (
    MissingDataDirectory,
    WrongCheckpoint,
    _check_data,
    as_parser_backend,
    check_task,
    checkpoint_task,
    data_advice,
    load_checkpoint,
)


def state(task, arch, data="bin"):
    """As fairseq's load_checkpoint_to_cpu returns it: the config as an OmegaConf DictConfig."""
    from omegaconf import OmegaConf

    return {"cfg": OmegaConf.create({"task": {"_name": task, "data": data}, "model": {"_name": arch, "arch": arch}})}


def _plain(task, arch):
    return {"cfg": {"task": {"_name": task, "data": "bin"}, "model": {"_name": arch}}}


def test_the_task_of_hydra_and_pre_hydra_checkpoints():
    assert checkpoint_task(_plain("tree_induction", "structformer_tiny")) == "tree_induction"
    assert checkpoint_task({"args": argparse.Namespace(task="translation", arch="transformer")}) == "translation"
    assert checkpoint_task({}) is None
    _check_data("old.pt", {"args": argparse.Namespace(task="translation", data="gone")}, "x")  # no cfg: not checked


def test_a_checkpoint_of_another_task_names_its_task_arch_and_the_tool_that_runs_it():
    check_task("a.pt", _plain("constituency_parsing", "lal_parser_tiny"), ["constituency_parsing"], "x")
    check_task("a.pt", _plain("tree_translation", "t"), [], "x")  # nothing expected: anything goes
    with pytest.raises(WrongCheckpoint) as e:
        check_task("t2s.pt", _plain("tree_translation", "tree2seq_tiny"), ["constituency_parsing"],
                   "fairseq-tree-parse")
    assert str(e.value) == (
        "t2s.pt is a 'tree_translation' checkpoint (arch tree2seq_tiny); fairseq-tree-parse takes "
        "constituency_parsing checkpoints. Run it with fairseq-generate / fairseq-interactive DATA --task "
        "tree_translation --user-dir $(fairseq-tree-user-dir), or load it with Tree2SeqModel.from_pretrained.")
    assert (e.value.path, e.value.task, e.value.arch) == ("t2s.pt", "tree_translation", "arch tree2seq_tiny")
    old = {"args": argparse.Namespace(task="masked_lm", arch="roberta_base")}
    with pytest.raises(WrongCheckpoint, match=r"^old\.pt is a 'masked_lm' checkpoint \(arch roberta_base\); "
                                              r"fairseq-tree-induce takes tree_induction checkpoints\. Run it with "
                                              r"the tool of that task, or load it with its model's from_pretrained\.$"):
        check_task("old.pt", old, ["tree_induction"], "fairseq-tree-induce")


def test_the_advice_names_the_flag_of_each_kind_of_user():
    assert data_advice("fairseq-tree-parse") == "fairseq-tree-parse --data DIR"
    assert data_advice("fairseq-tree-parse (LALParserModel.from_pretrained)") == \
        "fairseq-tree-parse --data DIR; data_name_or_path=DIR for LALParserModel.from_pretrained"
    assert data_advice("LALParserModel.from_pretrained") == "data_name_or_path=DIR for LALParserModel.from_pretrained"
    assert data_advice("this tool") == "--data DIR for this tool"


def test_a_missing_data_directory_is_named_from_where_it_was_looked_for(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bin").mkdir()
    _check_data("a.pt", state("tree_induction", "structformer_tiny", "bin"), "fairseq-tree-induce")  # there
    with pytest.raises(MissingDataDirectory) as e:
        _check_data("a.pt", state("tree_induction", "structformer_tiny", "gone:bin"), "fairseq-tree-induce")
    assert str(e.value) == (f"a.pt was trained on the data directory 'gone', which is not there (from {tmp_path}): "
                            "give the data-bin with its dictionaries (fairseq-tree-induce --data DIR), or a folder "
                            "written by fairseq-tree-export CKPT OUT, which holds everything the model needs")
    again = pickle.loads(pickle.dumps(e.value))  # to a worker process's parent: the same error
    assert type(again) is MissingDataDirectory and str(again) == str(e.value)


def test_a_parser_backend_rewords_both_errors_in_its_own_options():
    with pytest.raises(WrongCheckpoint, match=r"^sf\.pt is a 'tree_induction' checkpoint \(arch sf\); --parser lal "
                                              r"takes constituency_parsing checkpoints: give it with --parser "
                                              r"induced$"):
        with as_parser_backend("lal"):
            raise WrongCheckpoint("x", "sf.pt", "tree_induction", "arch sf")
    with pytest.raises(WrongCheckpoint, match=r"--parser induced takes tree_induction checkpoints: it is no parser: "
                                              r"run it with fairseq-tree-classify$"):
        with as_parser_backend("induced"):
            raise WrongCheckpoint("x", "c.pt", "tree_classification", "arch c")
    with pytest.raises(MissingDataDirectory, match=r"\(--parser-data DIR\)") as e:
        with as_parser_backend("lal"):
            raise MissingDataDirectory("a.pt", "lal_bin", "fairseq-tree-parse --data DIR", "/here")
    assert (e.value.path, e.value.data, e.value.cwd) == ("a.pt", "lal_bin", "/here")


@pytest.fixture
def structformer(tmp_path):
    """A structformer_tiny checkpoint as fairseq-train saves one (its config as plain containers), built from the
    CLI's flags without training, and its data-bin (a 20-word dictionary)."""
    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    data = tmp_path / "bin"
    data.mkdir()
    (data / "dict.txt").write_text("".join(f"w{i} 1\n" for i in range(20)))
    args = options.parse_args_and_arch(options.get_training_parser(), [
        str(data), "--task", "tree_induction", "--arch", "structformer_tiny", "--criterion", "masked_lm", "--cpu"])
    cfg = convert_namespace_to_omegaconf(args)
    model = tasks.setup_task(cfg.task).build_model(cfg.model)
    torch.save({"args": None, "cfg": OmegaConf.to_container(cfg), "model": model.state_dict(),
                "optimizer_history": [{"criterion_name": "MaskedLmLoss", "optimizer_name": "Adam",
                                       "lr_scheduler_state": {}, "num_updates": 0}],
                "extra_state": {}, "last_optimizer_state": None}, tmp_path / "ck.pt")
    return tmp_path / "ck.pt", data, model.state_dict()


def test_a_checkpoint_loads_with_another_data_directory_and_task_options(structformer, tmp_path):
    import shutil

    import torch

    ckpt, data, weights = structformer
    moved = tmp_path / "moved_bin"
    shutil.move(str(data), str(moved))  # the recorded data directory is gone
    with pytest.raises(MissingDataDirectory, match=r"fairseq-tree-induce --data DIR"):
        load_checkpoint(str(ckpt), device="cpu", expect=("tree_induction",), user="fairseq-tree-induce")
    with pytest.raises(WrongCheckpoint, match=r"'tree_induction' checkpoint \(arch structformer_tiny\)"):
        load_checkpoint(str(ckpt), data=str(moved), device="cpu", expect=("constituency_parsing",),
                        user="fairseq-tree-parse")
    models, cfg, task = load_checkpoint(str(ckpt), data=str(moved), device="cpu", expect=("tree_induction",),
                                        user="fairseq-tree-induce", task_options={"eval_keep_case": True})
    assert (cfg.task.data, task.cfg.data, task.cfg.eval_keep_case) == (str(moved), str(moved), True)
    model = models[0]
    assert type(model).__name__ == "StructFormerModel" and not model.training
    assert all(torch.equal(a, weights[k]) for k, a in model.state_dict().items())
