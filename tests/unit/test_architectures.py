"""Registered sizes against the papers' and baselines' published configurations."""

import argparse

from fairseq.models import ARCH_CONFIG_REGISTRY

import fairseq_tree  # noqa: F401  (registers the architectures)


def test_tree2seq_multi30k_tiny_is_wu_et_al_transformer_tiny():
    """Wu et al. 2021 (github LividWo/Revisit-MMT, fairseq/models/transformer.py, transformer_tiny): d 128, FFN 256,
    4 heads, 4 + 4 layers; unset options keep fairseq's base defaults (dropout 0.1, set to 0.3 by their flags)."""
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY["tree2seq_multi30k_tiny"](args)
    for side in ("encoder", "decoder"):
        assert (getattr(args, f"{side}_embed_dim"), getattr(args, f"{side}_ffn_embed_dim"),
                getattr(args, f"{side}_attention_heads"), getattr(args, f"{side}_layers")) == (128, 256, 4, 4)
    assert args.dropout == 0.1
