"""``--optimizer adam_l2`` (fairseq_tree/optim/adam_l2.py): torch's Adam with the weight decay added to the gradient,
as the StructFormer code trains, against hand-computed steps and fairseq's own (decoupled) ``adam``."""

import pytest
import torch
from fairseq import optim
from omegaconf import OmegaConf

import fairseq_tree  # noqa: F401  (registers adam_l2)

LR, WD = 1e-3, 0.01


def _step(name: str, steps: int = 1):
    """Two weights: a = 0.1 with loss gradient 0 (an unseen word's embedding), b = 0.5 with gradient 2.0."""
    a, b = (torch.nn.Parameter(torch.tensor([v], dtype=torch.float64)) for v in (0.1, 0.5))
    cfg = OmegaConf.create({"_name": name, "lr": [LR], "adam_betas": "(0.9, 0.999)", "adam_eps": 1e-8,
                            "weight_decay": WD, **({"tpu": False} if name == "adam" else {})})
    opt = optim.build_optimizer(cfg, [a, b])
    for _ in range(steps):
        a.grad, b.grad = torch.zeros_like(a), torch.full_like(b, 2.0)
        opt.step()
    return opt, a.item(), b.item()


def test_adam_l2_first_step_by_hand():
    opt, a, b = _step("adam_l2")
    assert type(opt._optimizer) is torch.optim.Adam and opt._optimizer.defaults["weight_decay"] == WD
    # step 1: g' = g + wd p; m_hat = g', v_hat = g'^2, so p -= lr g' / (|g'| + eps)
    ga, gb = WD * 0.1, 2.0 + WD * 0.5
    assert a == pytest.approx(0.1 - LR * ga / (ga + 1e-8), abs=1e-9)  # 0.0990000: a whole lr step toward 0
    assert b == pytest.approx(0.5 - LR * gb / (gb + 1e-8), abs=1e-9)


def test_fairseq_adam_decouples_the_decay():
    _, a, b = _step("adam")
    # AdamW: p *= 1 - lr wd, then the Adam step of the loss gradient alone (0 for a)
    assert a == pytest.approx(0.1 * (1 - LR * WD), abs=1e-9)
    assert b == pytest.approx(0.5 * (1 - LR * WD) - LR * 2.0 / (2.0 + 1e-8), abs=1e-9)


def test_adam_l2_moves_an_unseen_weight_about_lr_per_step():
    # gradient wd * a alone, a nearly constant: m_hat / sqrt(v_hat) ~ 1, so 10 steps take a from 0.1 to ~0.09;
    # decoupled, 10 steps take 0.1 to 0.1 (1 - 1e-5)^10 = 0.099990
    assert _step("adam_l2", 10)[1] == pytest.approx(0.09, abs=1e-4)
    assert _step("adam", 10)[1] == pytest.approx(0.1 * (1 - LR * WD) ** 10, abs=1e-9)


def test_adam_l2_reads_the_command_lines_betas():
    cfg = OmegaConf.create({"_name": "adam_l2", "lr": [0.5], "adam_betas": "(0.8,0.9)", "adam_eps": 1e-9,
                            "weight_decay": 1.2e-6})
    opt = optim.build_optimizer(cfg, [torch.nn.Parameter(torch.zeros(2))])
    assert opt.optimizer_config == {"lr": 0.5, "betas": (0.8, 0.9), "eps": 1e-9, "weight_decay": 1.2e-6}
    cfg.adam_betas = [0.7, 0.95]  # a config's list
    assert optim.build_optimizer(cfg, [torch.nn.Parameter(torch.zeros(2))]).optimizer_config["betas"] == (0.7, 0.95)


def test_adam_l2_defaults_and_help():
    # the registered dataclass fills what a config leaves out: torch's defaults
    cfg = OmegaConf.create({"_name": "adam_l2", "lr": [0.1]})
    opt = optim.build_optimizer(cfg, [torch.nn.Parameter(torch.zeros(2))])
    assert opt.optimizer_config == {"lr": 0.1, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0}
    import argparse

    from fairseq.dataclass.utils import gen_parser_from_dataclass

    from fairseq_tree.optim.adam_l2 import AdamL2Config

    parser = argparse.ArgumentParser()
    gen_parser_from_dataclass(parser, AdamL2Config())
    text = " ".join(parser.format_help().split())
    assert "--adam-betas ADAM_BETAS betas for Adam optimizer" in text
    assert "--adam-eps ADAM_EPS epsilon for Adam optimizer" in text
    assert "--weight-decay WEIGHT_DECAY L2 weight decay, added to the gradient (coupled)" in text
