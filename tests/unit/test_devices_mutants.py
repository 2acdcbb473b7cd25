"""``--device`` checks (fairseq_tree/utils/devices.py) on a machine with one GPU, as torch reports it (its two
queries patched: this box has none): ``cuda:1`` stops before any work, ``cuda`` and ``cuda:0`` pass, and the default
is the GPU. Bugs of one line that only a GPU machine would catch (scripts/mutation/, docs/development.md)."""

import argparse

import pytest
import torch

from fairseq_tree.utils.devices import add_device_args, check_device, default_device, resolve_device


@pytest.fixture
def one_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def test_one_gpu_takes_cuda_and_cuda_0_not_cuda_1(one_gpu):
    assert [check_device(d) for d in ("cpu", "cuda", "cuda:0")] == ["cpu", "cuda", "cuda:0"]
    for bad in ("cuda:1", "cuda:7"):
        with pytest.raises(ValueError, match=rf"^--device {bad}: only 1 CUDA device\(s\) here$"):
            check_device(bad)


def test_the_default_is_the_gpu_when_there_is_one(one_gpu):
    assert default_device() == "cuda"
    assert [resolve_device(d) for d in (None, "", "auto", "cpu", "cuda:0")] == ["cuda", "cuda", "cuda", "cpu",
                                                                              "cuda:0"]


def test_the_cli_options_on_one_gpu(one_gpu, capsys):
    p = argparse.ArgumentParser(prog="fairseq-tree-parse")
    add_device_args(p)
    assert [p.parse_args(a).device for a in ([], ["--cpu"], ["--device", "cuda:0"])] == [None, "cpu", "cuda:0"]
    with pytest.raises(SystemExit):
        p.parse_args(["--device", "cuda:1"])
    assert "argument --device: --device cuda:1: only 1 CUDA device(s) here" in capsys.readouterr().err


def test_without_a_gpu_cuda_is_refused_before_any_work(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert default_device() == "cpu" and resolve_device(None) == "cpu" and check_device("cpu") == "cpu"
    with pytest.raises(ValueError, match=r"^--device cuda:0: CUDA is not available on this machine .*; use "
                                         r"--device cpu$"):
        check_device("cuda:0")
    for bad in ("gpu", "cuda:", "cuda:x", "cpu:0", ""):
        with pytest.raises(ValueError, match=r"expected cpu, cuda or cuda:N"):
            check_device(bad)
