"""The plain masked-LM baseline ``mlm_transformer`` (fairseq_tree/models/mlm_transformer.py): the network of
``constituent_transformer`` without the prior, on fairseq's layers (parameter counts, equality with
constituent_transformer --no-constituent-attention, batch invariance, training, initialisation).
Helpers and the tiny dictionary come from test_constituent_attention.py."""

import argparse
import math

import pytest
import torch
from test_constituent_attention import SENTS, batch, dictionary, tiny, train_steps  # noqa: F401 (a fixture)

from fairseq_tree.models import constituent_transformer as ct
from fairseq_tree.models import mlm_transformer as mt


def mlm_tiny(dictionary, seed=0, **over):
    torch.manual_seed(seed)
    return mt.build_standalone(dictionary, "mlm_transformer_tiny", **over).eval()


def n_params(model):
    return sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("suffix", ["_tiny", "_small"])
def test_mlm_transformer_matches_constituent_without_prior_param_count(dictionary, suffix):
    mlm = mt.build_standalone(dictionary, "mlm_transformer" + suffix)
    ca = ct.build_standalone(dictionary, "constituent_transformer" + suffix)
    no_ca = ct.build_standalone(dictionary, "constituent_transformer" + suffix, no_constituent_attention=True)
    own = ct.build_standalone(dictionary, "constituent_transformer" + suffix, ca_own_norm=True)
    d, L = ca.args.encoder_embed_dim, ca.args.encoder_layers
    link_maps = L * (d * 2 * d + 2 * d)  # Linear(d, 2d) per layer
    assert n_params(mlm) == n_params(no_ca) == n_params(ca) - link_maps
    assert n_params(mlm) == n_params(own) - link_maps - L * 2 * d  # + the links' own LayerNorm
    assert mlm.encoder.lm_head.weight is mlm.encoder.embed_tokens.weight


def test_mlm_transformer_archs():
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    import fairseq_tree.models.structformer  # noqa: F401  (its archs, for the comparison below)
    sizes = {"mlm_transformer": (512, 10, 8, 2048, 0.1), "mlm_transformer_small": (256, 6, 4, 1024, 0.1),
             "mlm_transformer_tiny": (32, 3, 2, 64, 0.0), "mlm_transformer_sf": (512, 8, 8, 2048, 0.1),
             "mlm_transformer_sf_small": (256, 8, 4, 1024, 0.1)}
    for arch, size in sizes.items():
        assert ARCH_MODEL_REGISTRY[arch] is mt.MLMTransformerModel
        args = argparse.Namespace()
        ARCH_CONFIG_REGISTRY[arch](args)
        assert (args.encoder_embed_dim, args.encoder_layers, args.encoder_attention_heads,
                args.encoder_ffn_embed_dim, args.dropout) == size
        assert args.encoder_post_norm is False and args.word_only_attention is False
        # same sizes, dropouts and activation as the constituent_transformer / structformer arch
        other = (arch.replace("mlm_transformer_sf", "structformer") if "_sf" in arch
                 else arch.replace("mlm_transformer", "constituent_transformer"))
        cargs = argparse.Namespace()
        ARCH_CONFIG_REGISTRY[other](cargs)
        keys = ("encoder_embed_dim", "encoder_layers", "encoder_attention_heads", "encoder_ffn_embed_dim",
                "dropout", "attention_dropout", "activation_dropout", "activation_fn", "max_positions")
        assert all(getattr(args, k) == getattr(cargs, k) for k in keys), (arch, other)


def constituent_to_mlm_state(sd):
    """constituent_transformer (no prior) state dict -> mlm_transformer names (in_proj split into q, k, v)."""
    out = {}
    for key, val in sd.items():
        if ".attn.in_proj." in key:
            for name, part in zip(("q_proj", "k_proj", "v_proj"), val.chunk(3, 0)):
                out[key.replace("attn.in_proj", f"self_attn.{name}")] = part
            continue
        key = (key.replace(".attn.out_proj.", ".self_attn.out_proj.").replace(".attn_norm.", ".self_attn_layer_norm.")
               .replace(".ffn_norm.", ".final_layer_norm."))
        out[key] = val
    return out


@pytest.mark.parametrize("post_norm", [False, True])
def test_mlm_transformer_word_only_equals_constituent_without_prior(dictionary, post_norm):
    plain = tiny(dictionary, no_constituent_attention=True, encoder_post_norm=post_norm)
    mlm = mlm_tiny(dictionary, seed=1, word_only_attention=True, encoder_post_norm=post_norm)
    default = mlm_tiny(dictionary, seed=1, encoder_post_norm=post_norm)
    state = constituent_to_mlm_state(plain.state_dict())
    mlm.load_state_dict(state, strict=True)
    default.load_state_dict(state, strict=True)
    assert all(layer.normalize_before is not post_norm for layer in mlm.encoder.layers)
    assert (mlm.encoder.final_norm is None) == post_norm
    src = batch(dictionary, SENTS[:4])
    word = src.ne(dictionary.bos()) & src.ne(dictionary.eos()) & src.ne(dictionary.pad())
    with torch.no_grad():
        y0, _ = plain(src)
        y1, e1 = mlm(src)
        y2, _ = default(src)
    assert torch.isfinite(y1).all()
    assert torch.allclose(y1, y0, atol=1e-5)  # every position, pad included
    # the default mask (key padding only) lets words see BOS and EOS: a different model
    assert (y2 - y0).abs().amax(-1)[word].min() > 1e-4
    assert torch.equal(e1["word_mask"], word)


@pytest.mark.parametrize("word_only", [False, True])
def test_mlm_transformer_batch_invariance(dictionary, word_only):
    model = mlm_tiny(dictionary, word_only_attention=word_only)
    sent = SENTS[1]
    T = len(sent) + 2
    full = batch(dictionary, [SENTS[0], sent, SENTS[2], SENTS[3]])
    alone = batch(dictionary, [sent])
    with torch.no_grad():
        lf, ef = model(full, return_all_hiddens=True)
        la, ea = model(alone, return_all_hiddens=True)
        # padding is excluded: extra padding columns change nothing
        lp, _ = model(batch(dictionary, [sent], T=T + 4))
    assert torch.allclose(lf[1, :T], la[0], atol=1e-5)
    assert torch.allclose(lp[0, :T], la[0], atol=1e-5)
    assert torch.isfinite(lf).all()
    L = model.args.encoder_layers
    assert len(ef["inner_states"]) == L + 1 and ef["inner_states"][0].shape == (4, full.size(1), 32)
    for hf, ha in zip(ef["inner_states"], ea["inner_states"]):
        assert torch.allclose(hf[1, :T], ha[0], atol=1e-5)
    feats, extra = model(full, features_only=True)
    assert feats.shape == (4, full.size(1), 32) and extra["inner_states"] is None
    assert not hasattr(model, "induce")  # the tree_induction task parses only models that have induce()
    with pytest.raises(AttributeError, match="induces no structure"):
        model.induce(full)


def test_mlm_transformer_training_step(dictionary):
    model = mlm_tiny(dictionary)
    losses = train_steps(model, dictionary, 30)
    assert losses[-1] < 0.6 * losses[0], losses
    for layer in model.encoder.layers:
        assert layer.self_attn.q_proj.weight.grad.abs().sum() > 0


def test_mlm_transformer_init_matches_constituent(dictionary):
    """Same initial distribution as constituent_transformer: xavier-uniform weights (q/k/v: the bound of the
    joint 3d x d map), zero biases, N(0, d^-1/2) embeddings with a zero pad row."""
    model = mt.build_standalone(dictionary, "mlm_transformer_small")
    cmod = ct.build_standalone(dictionary, "constituent_transformer_small")
    d, ffn = 256, 1024
    emb = model.encoder.embed_tokens.weight
    assert emb[dictionary.pad()].abs().sum() == 0
    assert emb.std().item() == pytest.approx(d ** -0.5, rel=0.05)
    for layer, clayer in zip(model.encoder.layers, cmod.encoder.layers):
        att = layer.self_attn
        for m in (att.q_proj, att.k_proj, att.v_proj, att.out_proj, layer.fc1, layer.fc2):
            assert m.bias.abs().sum() == 0
        qkv = torch.cat([att.q_proj.weight, att.k_proj.weight, att.v_proj.weight])
        pairs = ((qkv, clayer.attn.in_proj.weight, 4 * d), (att.out_proj.weight, clayer.attn.out_proj.weight, 2 * d),
                 (layer.fc1.weight, clayer.fc1.weight, d + ffn), (layer.fc2.weight, clayer.fc2.weight, d + ffn))
        for w, cw, fan in pairs:
            bound = math.sqrt(6 / fan)  # xavier uniform: U(-b, b), std b / sqrt(3)
            assert w.abs().max() <= bound and cw.abs().max() <= bound
            assert w.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.05)
            assert cw.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.05)
