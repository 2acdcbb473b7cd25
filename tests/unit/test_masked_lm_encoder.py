"""The masked-LM encoder base (models/masked_lm_encoder.py) under constituent_transformer, structformer and
mlm_transformer: checkpoints keep their state-dict keys (the lists below were recorded from the encoders before
the base existed), the LM head is tied to the token embeddings, embeddings are scaled by sqrt(d)."""

import math

import pytest
import torch
from fairseq.data import Dictionary

from fairseq_tree.models import constituent_transformer as ct
from fairseq_tree.models import mlm_transformer as mt
from fairseq_tree.models import structformer as sf
from fairseq_tree.models.masked_lm_encoder import MaskedLMEncoder

HEAD = ["embed_tokens.weight", "final_norm.bias", "final_norm.weight", "lm_head.bias", "lm_head.dense.bias",
        "lm_head.dense.weight", "lm_head.layer_norm.bias", "lm_head.layer_norm.weight", "lm_head.weight"]
KEYS = {  # one layer: encoder.layers.0.<name>
    (ct, "constituent_transformer_tiny"): (
        ["attn.in_proj.bias", "attn.in_proj.weight", "attn.link_proj.bias", "attn.link_proj.weight",
         "attn.out_proj.bias", "attn.out_proj.weight", "attn_norm.bias", "attn_norm.weight", "fc1.bias",
         "fc1.weight", "fc2.bias", "fc2.weight", "ffn_norm.bias", "ffn_norm.weight"], []),
    (sf, "structformer_tiny"): (
        ["attn.in_proj.bias", "attn.in_proj.weight", "attn.out_proj.bias", "attn.out_proj.weight",
         "attn.rel_logits", "attn_norm.bias", "attn_norm.weight", "fc1.bias", "fc1.weight", "fc2.bias",
         "fc2.weight", "ffn_norm.bias", "ffn_norm.weight"],
        ["parser.convs.0.bias", "parser.convs.0.weight", "parser.convs.1.bias", "parser.convs.1.weight",
         "parser.distance_hidden.bias", "parser.distance_hidden.weight", "parser.distance_out.bias",
         "parser.distance_out.weight", "parser.height_hidden.bias", "parser.height_hidden.weight",
         "parser.height_out.bias", "parser.height_out.weight", "parser.log_scale"]),
    (mt, "mlm_transformer_tiny"): (
        ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight", "final_layer_norm.bias", "final_layer_norm.weight",
         "self_attn.k_proj.bias", "self_attn.k_proj.weight", "self_attn.out_proj.bias", "self_attn.out_proj.weight",
         "self_attn.q_proj.bias", "self_attn.q_proj.weight", "self_attn.v_proj.bias", "self_attn.v_proj.weight",
         "self_attn_layer_norm.bias", "self_attn_layer_norm.weight"], []),
}


def _dictionary():
    d = Dictionary()
    for w in "the cat sat on a mat".split():
        d.add_symbol(w)
    return d


@pytest.mark.parametrize("module,arch", list(KEYS))
def test_state_dict_keys_unchanged_by_the_base(module, arch):
    layer, structure = KEYS[(module, arch)]
    model = module.build_standalone(_dictionary(), arch, encoder_layers=1)
    expected = sorted(["encoder." + k for k in HEAD + structure] + ["encoder.layers.0." + k for k in layer])
    assert sorted(model.state_dict()) == expected
    assert isinstance(model.encoder, MaskedLMEncoder)


@pytest.mark.parametrize("module,arch", list(KEYS))
def test_lm_head_tied_and_embeddings_scaled(module, arch):
    d = _dictionary()
    model = module.build_standalone(d, arch, encoder_layers=1, dropout=0.0).eval()
    enc = model.encoder
    assert enc.lm_head.weight is enc.embed_tokens.weight
    tok = torch.tensor([[d.bos(), 4, 5, 6, d.eos()]])
    dim = model.args.encoder_embed_dim
    expected = math.sqrt(dim) * enc.embed_tokens(tok) + enc.embed_positions(tok)
    assert torch.equal(enc.embed(tok), expected)
    logits, extra = model(tok)
    assert logits.shape == (1, 5, len(d)) and extra["word_mask"].tolist() == [[False, True, True, True, False]]


@pytest.mark.parametrize("module,arch", list(KEYS))
def test_code_embedding_and_linear_head(module, arch):
    """--no-scale-embedding feeds E[x] + positions (the parser too); --lm-head linear is the authors' StructFormer
    output layer: logits = h E^T + b (b 0 at init), over the masked positions only when given them."""
    d = _dictionary()
    torch.manual_seed(0)
    model = module.build_standalone(d, arch, encoder_layers=1, dropout=0.0, no_scale_embedding=True,
                                    lm_head="linear").eval()
    enc = model.encoder
    tok = torch.tensor([[d.bos(), 4, 5, 6, d.eos()]])
    assert torch.equal(enc.embed(tok), enc.embed_tokens(tok) + enc.embed_positions(tok))
    assert sorted(k for k in model.state_dict() if "lm_head" in k) == ["encoder.lm_head.bias",
                                                                       "encoder.lm_head.weight"]
    with torch.no_grad():
        enc.lm_head.bias.copy_(torch.arange(len(d), dtype=torch.float))
        h, _ = enc.extract_features(tok)
        logits, _ = model(tok)
        masked = tok.eq(5)
        sel, _ = model(tok, masked_tokens=masked)
    E = enc.embed_tokens.weight
    ref = torch.einsum("btd,vd->btv", h, E) + torch.arange(len(d), dtype=torch.float)
    assert torch.allclose(logits, ref, atol=1e-5)
    assert sel.shape == (1, len(d)) and torch.allclose(sel[0], ref[0, 2], atol=1e-5)
    if module is sf:  # the parser reads the unscaled embeddings: scaling them by sqrt(d) changes the heights
        _, height, *_ = enc.parse(tok)
        enc.embed_scale = math.sqrt(model.args.encoder_embed_dim)
        _, height_scaled, *_ = enc.parse(tok)
        assert not torch.allclose(height, height_scaled)


@pytest.mark.parametrize("module,arch", list(KEYS))
def test_untied_head_and_xavier_embeddings(module, arch):
    """--lm-head untied (the authors' Tree Transformer code): logits = h W^T + b with W [V, d] a parameter of its
    own (not the embeddings), xavier-bounded, over the masked positions only when given them. --embed-init
    xavier: |E| <= sqrt(6 / (V + d)), far below the normal init's d^-1/2 spread; the pad row stays 0."""
    d = _dictionary()
    torch.manual_seed(0)
    model = module.build_standalone(d, arch, encoder_layers=1, dropout=0.0, lm_head="untied",
                                    embed_init="xavier").eval()
    enc = model.encoder
    V, dim = len(d), model.args.encoder_embed_dim
    W, E = enc.lm_head.weight, enc.embed_tokens.weight
    assert W is not E and W.shape == (V, dim) and not torch.equal(W, E)
    bound = math.sqrt(6 / (V + dim))
    for w in (W, E):
        assert w.abs().max() <= bound and w.abs().max() > 0.9 * bound
    assert torch.all(E[d.pad()] == 0)
    tok = torch.tensor([[d.bos(), 4, 5, 6, d.eos()]])
    with torch.no_grad():
        h, _ = enc.extract_features(tok)
        logits, _ = model(tok)
        sel, _ = model(tok, masked_tokens=tok.eq(5))
    ref = torch.einsum("btd,vd->btv", h, W) + enc.lm_head.bias
    assert torch.allclose(logits, ref, atol=1e-5) and torch.allclose(sel[0], ref[0, 2], atol=1e-5)
    grads = torch.autograd.grad(model(tok)[0].sum(), [W, E], allow_unused=True)
    assert grads[0] is not None and not torch.equal(grads[0], grads[1])


@pytest.mark.parametrize("module,arch", list(KEYS))
def test_embed_dropout_separate_from_dropout(module, arch):
    """--embed-dropout P drops the input embeddings with P, whatever --dropout says (the authors' StructFormer code:
    0); unset, --dropout applies. In training mode, dropout zeroes entries and scales the rest by 1 / (1 - P)."""
    d = _dictionary()
    tok = torch.tensor([[d.bos()] + [4, 5, 6, 7, 8, 9] * 20 + [d.eos()]])
    for embed_dropout, p in ((0.0, 0.0), (0.5, 0.5), (None, 0.3)):
        model = module.build_standalone(d, arch, encoder_layers=1, dropout=0.3, embed_dropout=embed_dropout)
        enc = model.encoder.train()
        clean = enc.embed_scale * enc.embed_tokens(tok) + enc.embed_positions(tok)
        torch.manual_seed(0)
        out = enc.embed(tok)
        kept = out.ne(0) & clean.ne(0)
        assert torch.allclose(out[kept], clean[kept] / (1 - p))
        dropped = (out.eq(0) & clean.ne(0)).float().mean().item()
        assert abs(dropped - p) < 0.03, (embed_dropout, dropped)


@pytest.mark.parametrize("module,arch", list(KEYS))
@pytest.mark.parametrize("learned", [True, False])
def test_uniform_embeddings_as_the_structformer_code(module, arch, learned):
    """--embed-init uniform (the authors' StructFormer code's init_weights): token embeddings and learned positions
    drawn from U(-0.1, 0.1) (pad rows 0); the default normal(0, d^-1/2) of d = 32 reaches far beyond 0.1 over
    hundreds of draws. Sinusoidal positions are untouched."""
    d = _dictionary()
    torch.manual_seed(0)
    model = module.build_standalone(d, arch, encoder_layers=1, embed_init="uniform", encoder_learned_pos=learned)
    enc = model.encoder
    tables = [enc.embed_tokens.weight] + ([enc.embed_positions.weight] if learned else [])
    for w in tables:
        rows = torch.cat([w[:d.pad()], w[d.pad() + 1:]])
        assert rows.abs().max() <= 0.1 and rows.abs().max() > 0.09
        assert abs(rows.mean().item()) < 0.01 and abs(rows.std().item() - 0.2 / math.sqrt(12)) < 0.005
        assert torch.all(w[d.pad()] == 0)
    if not learned:
        assert not list(enc.embed_positions.parameters())
    default = module.build_standalone(d, arch, encoder_layers=1, encoder_learned_pos=learned).encoder
    E = default.embed_tokens.weight
    assert E.abs().max() > 0.3  # normal(0, d^-1/2): ~3.5 sd over ~400 draws
    assert abs(E[E.ne(0).any(1)].std().item() * math.sqrt(E.size(1)) - 1) < 0.1  # sd d^-1/2 (d = 32: 0.18)
    if learned:
        assert default.embed_positions.weight.abs().max() > 0.3


@pytest.mark.parametrize("module,arch", list(KEYS))
def test_encoder_call_gives_logits_unless_features_only(module, arch):
    """The encoder called as fairseq's masked-LM criterion calls a model's encoder: vocabulary logits [B, T, V] by
    default, the final features [B, T, d] with features_only=True (the LM head not applied)."""
    d = _dictionary()
    enc = module.build_standalone(d, arch, encoder_layers=1).encoder.eval()
    tok = torch.tensor([[d.bos(), 4, 5, 6, d.eos()]])
    with torch.no_grad():
        logits, _ = enc(tok)
        feats, _ = enc(tok, features_only=True)
        assert logits.shape == (1, 5, len(d)) and feats.shape == (1, 5, enc.args.encoder_embed_dim)
        torch.testing.assert_close(enc.lm_head(feats), logits)
