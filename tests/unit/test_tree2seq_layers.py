"""tree2seq's encoder layer and encoder written out (Nguyen et al., 2020, sec. 3: a Transformer layer whose
self-attention is the tree attention), and the decoder's causal-mask cache: small models, no training."""

import argparse
import random

import pytest
import torch
import torch.nn.functional as F
from fairseq.data import Dictionary
from tree_reference import collate, random_tree

import fairseq_tree  # noqa: F401  (registers the models and tasks)
from fairseq_tree.models.tree2seq_transformer import MAX_FUTURE_MASK, Tree2SeqModel
from fairseq_tree.tasks.tree_translation import TreeTranslationConfig, TreeTranslationTask


def _model(**overrides) -> Tree2SeqModel:
    """tree2seq_tiny (d 64, 2 + 2 layers), dropouts 0, over 20-symbol dictionaries."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    torch.manual_seed(0)
    d = Dictionary()
    for i in range(16):
        d.add_symbol(f"w{i}")
    args = argparse.Namespace(dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, **overrides)
    ARCH_CONFIG_REGISTRY["tree2seq_tiny"](args)
    return Tree2SeqModel.build_model(args, TreeTranslationTask(TreeTranslationConfig(), d, d, d)).eval()


def _batch(seed=3):
    """Two random trees with padding -> (src_tokens [2, N], src_nodes [2, M], src_spans [2, M, 2])."""
    rng = random.Random(seed)
    spans, node_pad, leaf_pad, _, _ = collate([random_tree(rng, 6), random_tree(rng, 3)], rng)
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(4, 20, leaf_pad.shape, generator=g).masked_fill(leaf_pad, 1)
    nodes = torch.randint(4, 20, node_pad.shape, generator=g).masked_fill(node_pad, 1)
    return tokens, nodes, spans


@pytest.mark.parametrize("normalize_before", [False, True])
def test_encoder_layer_is_attention_then_ffn_each_with_its_residual_and_norm(normalize_before):
    """Post-LN (the paper's): h = LN1(x + Att(x)), y = LN2(h + FFN(h)); pre-LN: h = x + Att(LN1(x)),
    y = h + FFN(LN2(h)); FFN(h) = W2 relu(W1 h + b1) + b2. Att is the layer's tree attention (tested against the
    paper's eqs. in test_tree_attention); this checks the composition around it, on padded trees."""
    model = _model(encoder_normalize_before=normalize_before, decoder_normalize_before=normalize_before)
    layer = model.encoder.layers[0]
    tokens, nodes, spans = _batch()
    tree = model.encoder.build_tree(tokens, nodes, spans)
    x = torch.randn(tokens.size(1) + nodes.size(1), 2, 64)

    def ln(m, v):
        return F.layer_norm(v, (64,), m.weight, m.bias, m.eps)

    def ffn(v):
        return F.linear(F.relu(F.linear(v, layer.fc1.weight, layer.fc1.bias)), layer.fc2.weight, layer.fc2.bias)

    def att(v):
        return layer.self_attn.forward_self(v, tree)[0]

    with torch.no_grad():
        if normalize_before:
            h = x + att(ln(layer.self_attn_layer_norm, x))
            want = h + ffn(ln(layer.final_layer_norm, h))
        else:
            h = ln(layer.self_attn_layer_norm, x + att(x))
            want = ln(layer.final_layer_norm, h + ffn(h))
        got, _ = layer(x, tree)
    live = ~tree.pad_mask.t()  # [N + M, B]: padded slots carry no value anyone reads
    torch.testing.assert_close(got[live], want[live], rtol=1e-5, atol=1e-5)


def test_encoder_states_are_empty_unless_asked_and_then_each_layers_output():
    """fairseq's encoder convention: ``encoder_states`` is [] by default (the generator does not keep L copies of
    the states); with ``return_all_hiddens`` it holds the embedded input and each layer's output, [N + M, B, C]
    each, the last one the encoder's output (post-LN: no final norm)."""
    model = _model()
    tokens, nodes, spans = _batch()
    with torch.no_grad():
        plain = model.encoder(tokens, src_nodes=nodes, src_spans=spans)
        every = model.encoder(tokens, src_nodes=nodes, src_spans=spans, return_all_hiddens=True)
    assert plain["encoder_states"] == []
    T = tokens.size(1) + nodes.size(1)
    assert [tuple(s.shape) for s in every["encoder_states"]] == [(T, 2, 64)] * 3  # input + 2 layers
    torch.testing.assert_close(every["encoder_states"][-1], plain["encoder_out"][0])
    tree = model.encoder.build_tree(tokens, nodes, spans)
    x1, _ = model.encoder.layers[0](every["encoder_states"][0], tree)
    torch.testing.assert_close(every["encoder_states"][1], x1)


@pytest.mark.parametrize("max_target_positions,side", [(40, 40), (4096, MAX_FUTURE_MASK)])
def test_the_causal_mask_cache_is_built_once_at_the_smaller_of_the_model_and_cap_sizes(max_target_positions, side):
    """``future_mask_of_max_size`` (before a compiled decoder reads fairseq's ``_future_mask``): a [n, n] mask,
    n = min(max target positions, 2048): -inf above the diagonal, 0 on and below; a second call keeps it."""
    model = _model(max_target_positions=max_target_positions)
    dec = model.decoder
    dec.future_mask_of_max_size()
    mask = dec._future_mask
    assert tuple(mask.shape) == (side, side)
    upper = torch.ones(side, side, dtype=torch.bool).triu(1)
    assert bool(mask[upper].eq(float("-inf")).all()) and bool(mask[~upper].eq(0).all())
    dec.future_mask_of_max_size()
    assert dec._future_mask is mask


def test_the_encoder_input_is_scaled_embeddings_with_positions_on_the_leaves_only():
    """Sec. 3: the leaves are word embeddings x sqrt(d) plus fairseq's sinusoidal positions (of the leaf
    sequence); the nodes are label embeddings x sqrt(d), with no position: [leaves; nodes], [N + M, B, C]."""
    model = _model()
    enc = model.encoder
    tokens, nodes, spans = _batch()
    with torch.no_grad():
        x0 = enc(tokens, src_nodes=nodes, src_spans=spans, return_all_hiddens=True)["encoder_states"][0]
        leaves = 8.0 * enc.embed_tokens.weight[tokens] + enc.embed_positions(tokens)
        labels = 8.0 * enc.embed_labels.weight[nodes]
    torch.testing.assert_close(x0, torch.cat([leaves, labels], 1).transpose(0, 1))


def test_return_attention_gives_each_layers_probabilities_over_the_live_keys():
    """``return_attention``: per layer [H, B, N + M, N + M] self-attention probabilities; every live query's row
    sums to 1 over the keys, and padded keys get 0."""
    model = _model()
    tokens, nodes, spans = _batch()
    with torch.no_grad():
        out = model.encoder(tokens, src_nodes=nodes, src_spans=spans, return_attention=True)
    T = tokens.size(1) + nodes.size(1)
    pad = out["encoder_padding_mask"][0]  # [B, T]
    assert len(out["attention"]) == 2
    for p in out["attention"]:
        assert tuple(p.shape) == (2, 2, T, T)
        for b in range(2):
            rows = p[:, b][:, ~pad[b]]  # [H, live queries, T]
            torch.testing.assert_close(rows.sum(-1), torch.ones_like(rows[..., 0]))
            assert bool(rows[..., pad[b]].eq(0).all()) and bool(rows[..., ~pad[b]].gt(0).any(-1).all())


def test_reorder_encoder_out_is_the_encoding_of_the_reordered_batch():
    """Beam search's reorder (new_order over sentences, here [1, 0, 0]): the outputs, states, padding masks and
    trees are those of encoding the sentences in that order."""
    model = _model()
    tokens, nodes, spans = _batch()
    order = torch.tensor([1, 0, 0])
    with torch.no_grad():
        out = model.encoder(tokens, src_nodes=nodes, src_spans=spans, return_all_hiddens=True)
        moved = model.encoder.reorder_encoder_out(out, order)
        want = model.encoder(tokens[order], src_nodes=nodes[order], src_spans=spans[order], return_all_hiddens=True)
    torch.testing.assert_close(moved["encoder_out"][0], want["encoder_out"][0])
    torch.testing.assert_close(moved["encoder_padding_mask"][0], want["encoder_padding_mask"][0])
    for a, b in zip(moved["encoder_states"], want["encoder_states"]):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(moved["tree"][0].pad_mask, want["tree"][0].pad_mask)
