"""LAL parser model and criterion: batch invariance, hinge loss at the margin, label attention shapes."""

import argparse
from types import SimpleNamespace

import pytest
import torch
from conftest import SHARED

from fairseq_tree.criterions.span_hinge_dependency import SpanHingeDependencyCriterion
from fairseq_tree.data.parsing_data import binarize, get_parser
from fairseq_tree.data.parsing_dataset import spans_to_chart
from fairseq_tree.models.lal_parser import LALParserModel, lal_parser_tiny
from fairseq_tree.modules.label_attention import LabelAttention
from fairseq_tree.tasks.constituency_parsing import ConstituencyParsingConfig, ConstituencyParsingTask

PTB = SHARED / "data" / "ptb_sample"


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    if not (PTB / "train.mrg").is_file():
        pytest.skip(f"{PTB} not found")
    d = tmp_path_factory.mktemp("lal_small")
    lines = (PTB / "train.mrg").read_text(encoding="utf-8").splitlines()[:30]
    (d / "t.mrg").write_text("\n".join(lines) + "\n", encoding="utf-8")
    blocks = [b for b in (PTB / "train.conllu").read_text(encoding="utf-8").split("\n\n") if b.strip()][:30]
    (d / "t.conllu").write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    binarize(get_parser().parse_args(["--destdir", str(d / "bin"), "--train", str(d / "t.mrg"),
                                      "--train-dep", str(d / "t.conllu")]))
    t = ConstituencyParsingTask.setup_task(ConstituencyParsingConfig(data=str(d / "bin")))
    t.load_dataset("train")
    return t


def _model(task, **over):
    args = argparse.Namespace(**over)
    lal_parser_tiny(args)
    torch.manual_seed(0)
    return LALParserModel(args, task.dicts, task.num_labels, task.num_relations).eval()


@pytest.mark.parametrize("tied", [False, True])
def test_batch_invariance(task, tied):
    model = _model(task, lal_tie_heads=tied, lal_no_pwff=tied)
    ds = task.datasets["train"]
    idx = [3, 0, 7, 12]
    batch = ds.collater([ds[i] for i in idx])
    with torch.no_grad():
        full = model(**batch["net_input"])
        spans, heads, rels, _ = model.parse(batch["net_input"])
        for b, i in enumerate(idx):
            one = ds.collater([ds[i]])
            alone = model(**one["net_input"])
            n = len(ds[i]["words"])
            assert torch.allclose(full["label_scores"][b, :n + 1, :n + 1], alone["label_scores"][0], atol=1e-5)
            assert torch.allclose(full["arc_scores"][b, :n + 1, :n + 1], alone["arc_scores"][0], atol=1e-5)
            assert torch.allclose(full["attention"][b, :, :n + 2], alone["attention"][0], atol=1e-6)
            assert full["attention"][b, :, n + 2:].abs().sum() == 0  # padding gets no label attention
            s1, h1, r1, _ = model.parse(one["net_input"])
            assert spans[b] == s1[0]
            assert heads[b, :n + 1].tolist() == h1[0].tolist() and rels[b, 1:n + 1].tolist() == r1[0, 1:].tolist()


def test_heads_default_to_labels_and_tie(task):
    model = _model(task, lal_tie_heads=True)
    assert model.lal_heads == task.num_labels
    with pytest.raises(ValueError):
        _model(task, lal_tie_heads=True, lal_heads=3)
    # tied: label l's score depends on head l's block only
    ds = task.datasets["train"]
    batch = ds.collater([ds[0]])
    h, _, _ = model.encode(**{k: batch["net_input"][k] for k in ("src_tokens", "src_tags", "src_chars")})
    h2 = h.clone()
    h2[:, :, 1] += torch.randn_like(h2[:, :, 1])
    a, b = model.span_scores(h), model.span_scores(h2)
    assert torch.allclose(a[..., [0] + list(range(2, a.size(-1)))], b[..., [0] + list(range(2, a.size(-1)))], atol=1e-5)
    assert not torch.allclose(a[..., 1], b[..., 1])


@pytest.mark.parametrize("pwff", [True, False], ids=["with_ffn", "no_ffn"])
def test_tied_heads_keep_label_l_in_block_l_through_the_lal(task, pwff):
    """--lal-tie-heads: head l's attention (its query q_l) reaches only block l of the LAL output and so only label
    l's span scores, with the position-wise feed-forward layer on (then it acts per head: a feed-forward layer
    over the concatenated heads mixes the labels, paper Fig. 5) or off."""
    model = _model(task, lal_tie_heads=True, lal_no_pwff=not pwff)
    assert model.lal.pwff == pwff
    ds = task.datasets["train"]
    batch = ds.collater([ds[0], ds[4]])
    inputs = {k: batch["net_input"][k] for k in ("src_tokens", "src_tags", "src_chars")}
    with torch.no_grad():
        h, attn, _ = model.encode(**inputs)
        model.lal.query[1] += 3.0 * torch.randn_like(model.lal.query[1])
        h2, attn2, _ = model.encode(**inputs)
        s, s2 = model.span_scores(h), model.span_scores(h2)
    others = [l for l in range(task.num_labels) if l != 1]
    assert not torch.allclose(attn[:, 1], attn2[:, 1])
    assert (h2[:, :, 1] - h[:, :, 1]).abs().max() > 1e-3
    torch.testing.assert_close(h2[:, :, others], h[:, :, others], atol=1e-6, rtol=0)
    torch.testing.assert_close(s2[..., others], s[..., others], atol=1e-5, rtol=0)
    assert (s2[..., 1] - s[..., 1]).abs().max() > 1e-4


def test_label_attention_is_one_vector_per_head():
    torch.manual_seed(0)
    lal = LabelAttention(8, 8, heads=5, d_kv=4, d_proj=6, residual_dropout=False, pwff=False).eval()
    x = torch.randn(2, 7, 16)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, 5:] = True
    h, a = lal(x, pad)
    assert h.shape == (2, 7, 30) and a.shape == (2, 5, 7)
    assert torch.allclose(a.sum(-1), torch.ones(2, 5)) and a[1, :, 5:].abs().max() == 0
    # reference: u_{t,l} = LN(R (x_t + o_l)) without the folding
    k = lal._split_heads(lal.key(x))
    v = lal._split_heads(lal.value(x))
    for b in range(2):
        for l in range(5):
            n = 7 if b == 0 else 5
            w = torch.softmax(k[b, :n, l] @ lal.query[l] / 2.0, 0)
            c = w @ v[b, :n, l]
            o = lal.proj(c[None])[0]
            for t in range(n):
                u = lal.ln(lal.reduce(x[b, t] + o))
                assert torch.allclose(h[b, t, 6 * l:6 * l + 6], u, atol=1e-5)


class _StubModel(torch.nn.Module):
    def __init__(self, scores):
        super().__init__()
        self.scores = torch.nn.Parameter(scores)

    def forward(self, **net_input):
        return {"label_scores": self.scores}


def _hinge(scores, gold_spans, n):
    crit = SpanHingeDependencyCriterion(SimpleNamespace(), dependency_weight=0.0)
    model = _StubModel(scores).train()
    sample = {"net_input": {"src_lengths": torch.tensor([n])}, "gold_spans": [gold_spans],
              "gold_chart": spans_to_chart([gold_spans], n), "nsentences": 1, "ntokens": n}
    loss, _, _ = crit(model, sample)
    loss.backward()
    return loss.item(), model.scores.grad


def test_hinge_zero_when_gold_wins_by_margin():
    n, L = 6, 4
    gold = [(0, 1, 2), (0, 3, 0), (3, 6, 1), (4, 6, 3), (0, 6, 0)]
    scores = torch.full((1, n + 1, n + 1, L), -1.01)
    for i, j, c in gold:
        scores[0, i, j] = torch.tensor([-0.01] * L)
        scores[0, i, j, c] = 1.0  # beats every other label of the span by > 1, and the empty label by 1
    loss, grad = _hinge(scores, gold, n)
    assert loss == 0.0 and grad.abs().max() == 0
    # below the margin: positive loss, gradient pushes gold up and the intruder down
    scores[0, 4, 6] = torch.tensor([-1.0, -1.0, -1.0, 0.5])
    scores[0, 4, 6, 0] = 0.2
    loss, grad = _hinge(scores, gold, n)
    assert loss > 0 and grad[0, 4, 6, 3] < 0 and grad[0, 4, 6, 0] > 0


def test_partitioned_linear_keeps_the_partitions_apart():
    """[x_c ; x_p] -> [x_c W_c ; x_p W_p]: the content output ignores the position input and vice versa; without
    bias (the attention's projections) a zero input gives zero in both partitions."""
    from fairseq_tree.modules.label_attention import PartitionedLinear

    torch.manual_seed(0)
    pl = PartitionedLinear(4, 2, 6, 3, bias=False)
    x = torch.randn(5, 6)
    y = x.clone()
    y[:, 4:] += 1.0  # the position half changes
    a, b = pl(x), pl(y)
    assert a.shape == (5, 9) and torch.equal(a[:, :6], b[:, :6]) and not torch.allclose(a[:, 6:], b[:, 6:])
    assert torch.equal(pl(torch.zeros(2, 6)), torch.zeros(2, 9))
    assert torch.allclose(a, torch.cat([x[:, :4] @ pl.c.weight.T, x[:, 4:] @ pl.p.weight.T], -1))


def test_partitioned_self_attention_as_written_out():
    """Kitaev & Klein (2018)'s partitioned multi-head attention, head by head in float64 (eval: no dropout): per head
    q, k, v are [content ; position] projections without bias, a = softmax(q k^T / sqrt(d_kv)) over real keys, the
    head's content and position halves concatenated across heads, projected back per partition, then the post-LN
    residual and the partitioned ReLU feed-forward."""
    from fairseq_tree.modules.label_attention import PartitionedSelfAttentionLayer

    torch.manual_seed(1)
    dc, dp, H, dkv, dff = 6, 4, 2, 4, 8
    layer = PartitionedSelfAttentionLayer(dc, dp, H, dkv, dff).double().eval()
    x = torch.randn(2, 5, dc + dp, dtype=torch.float64)
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    out = layer(x, pad)
    half, dh = H * dkv // 2, dkv // 2
    Wc, Wp = layer.qkv.c.weight, layer.qkv.p.weight  # [3 half, dc], [3 half, dp]: q, k, v stacked
    for b in range(2):
        T = int((~pad[b]).sum())
        xc, xp = x[b, :T, :dc], x[b, :T, dc:]
        ctx_c, ctx_p = [], []
        for h in range(H):
            rows = [slice(i * half + h * dh, i * half + (h + 1) * dh) for i in range(3)]  # q, k, v of head h
            q, k, v = (torch.cat([xc @ Wc[r].T, xp @ Wp[r].T], -1) for r in rows)
            a = torch.softmax(q @ k.T / dkv ** 0.5, -1)
            ctx = a @ v
            ctx_c.append(ctx[:, :dh])
            ctx_p.append(ctx[:, dh:])
        o = torch.cat([torch.cat(ctx_c, -1) @ layer.out.c.weight.T, torch.cat(ctx_p, -1) @ layer.out.p.weight.T], -1)
        h1 = torch.nn.functional.layer_norm(x[b, :T] + o, (dc + dp,), layer.ln1.weight, layer.ln1.bias)
        f1, f2 = layer.ff1, layer.ff2  # the feed-forward's linear maps have biases, partition by partition
        r = torch.relu(torch.cat([h1[:, :dc] @ f1.c.weight.T + f1.c.bias, h1[:, dc:] @ f1.p.weight.T + f1.p.bias], -1))
        y = torch.cat([r[:, :dff // 2] @ f2.c.weight.T + f2.c.bias, r[:, dff // 2:] @ f2.p.weight.T + f2.p.bias], -1)
        ref = torch.nn.functional.layer_norm(h1 + y, (dc + dp,), layer.ln2.weight, layer.ln2.bias)
        torch.testing.assert_close(out[b, :T], ref)


def test_label_attention_residual_dropout_by_default_and_even_sizes():
    """Residual dropout on the label attention's output is on by default (Mrini et al.'s code; the only dropout
    left here: no attention dropout, no feed-forward), so two training passes differ and eval passes agree; odd
    d_kv or d_proj cannot be split into content and position halves."""
    torch.manual_seed(2)
    lal = LabelAttention(6, 4, 3, d_kv=4, d_proj=4, dropout=0.5, attention_dropout=0.0, pwff=False)
    x, pad = torch.randn(2, 5, 10), torch.zeros(2, 5, dtype=torch.bool)
    lal.train()
    assert not torch.allclose(lal(x, pad)[0], lal(x, pad)[0])
    lal.eval()
    assert torch.equal(lal(x, pad)[0], lal(x, pad)[0])
    for kw in (dict(d_kv=5), dict(d_proj=3)):
        (name, size), = kw.items()
        with pytest.raises(ValueError, match=f"^{name}={size} must be even"):
            LabelAttention(6, 4, 3, **{**dict(d_kv=4, d_proj=4), **kw})
    from fairseq_tree.modules.label_attention import PartitionedSelfAttentionLayer

    with pytest.raises(ValueError, match="^d_kv=3 must be even"):
        PartitionedSelfAttentionLayer(6, 4, 2, 3, 8)
