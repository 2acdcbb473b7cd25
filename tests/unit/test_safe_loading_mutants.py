"""The opt-out of safe loading for a trusted file (fairseq_tree/safe_loading.py) as a user lists it: by any path to
the same file (a symlink, ``..``), never another file, never a file object; and the refusal's message. Bugs of one
line that tests/integration/test_safe_loading.py let through (scripts/mutation/, docs/development.md)."""

import io
import os
import pickle
from fractions import Fraction

import pytest
import torch

from fairseq_tree import safe_loading


@pytest.fixture
def legacy(tmp_path):
    """A file that holds a global outside the allowlist (a Fraction: harmless, but not plain data), a symlink to it
    in another folder, and a second such file."""
    path = tmp_path / "runs" / "legacy.pt"
    path.parent.mkdir()
    torch.save({"score": Fraction(1, 3)}, path)
    (tmp_path / "links").mkdir()
    link = tmp_path / "links" / "best.pt"
    os.symlink(path, link)
    other = tmp_path / "runs" / "other.pt"
    torch.save({"score": Fraction(2, 3)}, other)
    return path, link, other


def test_a_file_listed_by_a_symlink_is_trusted_by_its_real_path(legacy, monkeypatch):
    path, link, other = legacy
    monkeypatch.setenv(safe_loading.TRUST_ENV, str(link))
    assert safe_loading.load(path) == {"score": Fraction(1, 3)}
    assert safe_loading.load(link) == {"score": Fraction(1, 3)}
    with pytest.raises(safe_loading.UnsafeCheckpointError, match=r"other\.pt: refused by safe loading"):
        safe_loading.load(other)


def test_a_file_loaded_through_a_symlink_or_dots_is_trusted_when_listed(legacy, monkeypatch):
    path, link, other = legacy
    monkeypatch.setenv(safe_loading.TRUST_ENV, os.pathsep.join(["", str(path)]))
    assert safe_loading.load(link) == {"score": Fraction(1, 3)}
    assert safe_loading.load(str(link.parent / ".." / "runs" / "legacy.pt")) == {"score": Fraction(1, 3)}
    assert not safe_loading.trusted(other) and not safe_loading.trusted(str(path) + "x")


def test_each_file_of_a_list_is_trusted(legacy, monkeypatch):
    path, _, other = legacy
    monkeypatch.setenv(safe_loading.TRUST_ENV, os.pathsep.join([str(other), str(path)]))
    assert safe_loading.load(path) == {"score": Fraction(1, 3)}
    assert safe_loading.load(other) == {"score": Fraction(2, 3)}


def test_torchs_process_wide_opt_out_leaves_the_plugins_own_loads_safe(legacy, monkeypatch):
    """torch's TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 turns full pickle on for the loads that do not ask for
    weights_only (fairseq's own); fairseq_tree.safe_loading.load asks for it, so it still refuses an unlisted file."""
    path, _, _ = legacy
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    monkeypatch.delenv(safe_loading.TRUST_ENV, raising=False)
    with pytest.raises(safe_loading.UnsafeCheckpointError, match=r"legacy\.pt: refused by safe loading"):
        safe_loading.load(path)


def test_a_file_object_is_never_trusted_and_loads_safely(legacy, monkeypatch):
    """A checkpoint read from memory (a buffer): the trust list names paths, so it is loaded safely, whatever the
    list holds."""
    path, _, _ = legacy
    monkeypatch.setenv(safe_loading.TRUST_ENV, str(path))
    buf = io.BytesIO()
    torch.save({"w": torch.ones(2)}, buf)
    buf.seek(0)
    assert torch.equal(safe_loading.load(buf)["w"], torch.ones(2))
    with pytest.raises(safe_loading.UnsafeCheckpointError):
        safe_loading.load(io.BytesIO(path.read_bytes()))


def test_the_refusal_names_the_global_or_else_the_first_line_of_torchs_message():
    e = safe_loading.refusal("a.pt", pickle.UnpicklingError("Weights only load failed. Unsupported global: "
                                                            "GLOBAL os.system was not an allowed global\nmore"))
    assert str(e).startswith("a.pt: refused by safe loading (weights_only=True): it holds os.system, which is not")
    assert str(e).endswith(f"Only if you trust this file: {safe_loading.TRUST_ENV}=a.pt")
    e = safe_loading.refusal("b.pt", pickle.UnpicklingError("Weights only load failed: a new wording\ndetails"))
    assert "it holds Weights only load failed: a new wording, which is not" in str(e)


def test_fairseqs_own_loader_loads_a_listed_file_and_refuses_an_unlisted_one(tmp_path, monkeypatch):
    """fairseq's load_checkpoint_to_cpu (what fairseq-generate, fairseq-train --restore-file and the hubs call),
    guarded by the plugin: a listed checkpoint that holds a global outside the allowlist comes back as fairseq
    returns it (its extra state intact); the same file unlisted is refused with its name."""
    from fairseq import checkpoint_utils

    import fairseq_tree  # noqa: F401  (the import guards fairseq's loader)

    path = tmp_path / "old.pt"
    torch.save({"args": None, "cfg": None, "model": {"w": torch.ones(2)}, "extra_state": {"score": Fraction(1, 3)},
                "optimizer_history": [{"criterion_name": "CrossEntropyCriterion", "optimizer_name": "Adam",
                                       "lr_scheduler_state": {}, "num_updates": 7}]}, path)
    assert checkpoint_utils.load_checkpoint_to_cpu._fairseq_tree_guarded
    monkeypatch.setenv(safe_loading.TRUST_ENV, str(path))
    state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
    assert state["extra_state"]["score"] == Fraction(1, 3) and torch.equal(state["model"]["w"], torch.ones(2))
    assert state["optimizer_history"][-1]["num_updates"] == 7
    monkeypatch.delenv(safe_loading.TRUST_ENV)
    with pytest.raises(safe_loading.UnsafeCheckpointError, match=r"old\.pt: refused by safe loading"):
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
