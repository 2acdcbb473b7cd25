"""scripts/reference/authors_tree_transformer.py, the data adapter of the authors' Tree Transformer runs: our
dictionary as their vocabulary, their text2id/test() inputs, the evaluation's words, their dump_tree trees written
for the scorer; with their code (FAIRSEQ_TREE_REF_TT, a local copy; skipped without), that our text2id is theirs,
that the written trees are their build_tree brackets, that stage_K is their model after K updates, that the recipe
scores each stage before training the next, and that constituent_transformer with the code flags computes their
model given its weights."""

import argparse
import json
import os
from pathlib import Path

import pytest
from conftest import REPO, load_script

#: a local copy of yaushian/Tree-Transformer (04d19d3) for the tests that run their code; CI has none
TT_REF = os.environ.get("FAIRSEQ_TREE_REF_TT")
needs_their_code = pytest.mark.skipif(not TT_REF, reason="FAIRSEQ_TREE_REF_TT (their Tree-Transformer code) unset")


@pytest.fixture(scope="module")
def tt():
    return load_script(REPO / "scripts" / "reference" / "authors_tree_transformer.py")


def tt_words(tt, tmp_path, train_lines=None):
    """Their data_utils over the dict "the cat N" (ids 4 5 6 after their four specials)."""
    d = tmp_path / "dict.txt"
    d.write_text("the 10\ncat 5\n<unk> 3\nN 2\nmadeupword0000 0\n", encoding="utf-8")
    train = tmp_path / "train.txt"
    train.write_text("".join(line + "\n" for line in train_lines or []), encoding="utf-8")
    args = argparse.Namespace(seq_length=50, batch_size=64, no_cuda=True, model_dir=str(tmp_path / "model"),
                              train_path=str(train), train=train_lines is not None)
    return tt.Words(args, tt.fairseq_words(d))


def test_tt_vocabulary_is_our_dict_in_order_after_their_specials(tt, tmp_path):
    w = tt_words(tt, tmp_path)
    assert w.new_vocab == {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[CLS]": 3, "the": 4, "cat": 5, "N": 6}
    assert (w.eos_id, w.unk_id, w.mask_id, w.cls_id, w.vocab_size) == (0, 1, 2, 3, 7)
    assert w.index2word == ["[PAD]", "[UNK]", "[MASK]", "[CLS]", "the", "cat", "N"]
    with pytest.raises(SystemExit, match="'cat' twice"):
        tt.vocabulary(["the", "cat", "cat"])


def test_tt_text_to_ids_as_their_data_utils(tt, tmp_path):
    w = tt_words(tt, tmp_path, ["the cat sat", "N cat", ""])
    # [CLS] + one id per word ([UNK] 1 outside the dict), per line; their dictionary.json written
    assert w.training_data == [[3, 4, 5, 1], [3, 6, 5], [3]]
    assert json.loads((tmp_path / "model" / "dictionary.json").read_text())["N"] == 6
    assert w.text2id("the dog cat", 6).tolist() == [3, 4, 1, 5, 0, 0]  # 0 = [PAD] after
    assert w.text2id("the dog cat", 3).tolist() == [3, 4, 1]  # cut at seq_length
    assert w.text2id("cat").shape == (60,)  # their test()'s width
    vecs, masks = tt.encode(w, ["the cat", "cat"], 4)
    assert vecs.tolist() == [[3, 4, 5, 0], [3, 5, 0, 0]]
    assert masks.tolist() == [[[1, 1, 1, 0]], [[1, 1, 0, 0]]]  # expand_dims(vec != 0, -2)
    vecs, masks = tt.encode(w, ["the cat the cat the", "cat"], 4)  # widened to the longest + [CLS]
    assert vecs.shape == (2, 6) and masks.shape == (2, 1, 6) and vecs[0].tolist() == [3, 4, 5, 4, 5, 4]


def test_tt_words_by_the_evaluation_rule(tt, tmp_path):
    mrg = tmp_path / "x.mrg"
    mrg.write_text("(TOP (S (NP (DT The) (NN Cat)) (VP (VBD sat) (NP (CD 3.5) (NNS days))) (. .)))\n"
                   "(TOP (FRAG (. .)))\n", encoding="utf-8")
    assert tt.sentences(str(mrg)) == [(["the", "cat", "sat", "N", "days"], ["The", "Cat", "sat", "3.5", "days"]),
                                      ([], [])]


def test_tt_bracket_of_their_dump_tree(tt):
    from nltk import Tree
    words = ["The", "cat", "sat", "down"]
    # dump_tree's trees: "( ( 0) ( 1) )" is a node over words 0 and 1, a word a childless tree named by its index
    assert tt.bracket(Tree.fromstring("( ( ( 0) ( 1) ) ( ( 2) ( 3) ) )"), words) == "(X (X The cat) (X sat down))"
    assert tt.bracket(Tree.fromstring("( ( ( 0) ( 1) ( 2) ) ( 3) )"), words) == "(X (X The cat sat) down)"
    assert tt.bracket(Tree.fromstring("( ( 2) )"), words) == "sat"  # a one-child node is its child


@needs_their_code
def test_tt_text2id_equals_theirs_on_our_text(tt, tmp_path):
    their = tt.their_modules(TT_REF)
    w = tt_words(tt, tmp_path)
    for text in ("the cat", "N dog the", " ".join(["cat"] * 70), ""):
        for seq in (60, 8):
            assert w.text2id(text, seq).tolist() == their.utils.data_utils.text2id(w, text, seq).tolist()


@needs_their_code
def test_tt_trees_are_their_build_tree_brackets(tt):
    import numpy as np
    import torch
    from nltk import Tree
    their = tt.their_modules(TT_REF)
    rng = np.random.default_rng(0)

    def spans(t, start=0):  # -> (end, the spans of >= 2 words) of a tree with bare words
        if isinstance(t, str):
            return start + 1, set()
        end, out = start, set()
        for c in t:
            end, inner = spans(c, end)
            out |= inner
        return end, out | ({(start, end)} if end - start >= 2 else set())

    flat = 0
    for n in range(2, 14):
        probs = torch.tensor(rng.uniform(0.3, 1.0, size=(4, n + 3, n + 3)))  # [layers, [CLS] + words + pad]
        line = tt.tree_line(their.parse, probs, n, [f"w{i}" for i in range(n)], 0.8)
        tree = Tree.fromstring(line)
        assert tree.leaves() == [f"w{i}" for i in range(n)]
        bp = their.parse.get_break_prob(probs)[:, 1:n]
        assert spans(tree)[1] - {(0, n)} == their.parse.build_tree(bp, 3, 0, n - 1, 0.8) - {(0, n)}
        flat += line.count("(") == 1
    assert flat < 6  # the random links give nested trees
    assert tt.tree_line(their.parse, probs, 1, ["Word"], 0.8) == "(X Word)"
    assert tt.tree_line(their.parse, probs, 0, [], 0.8) == ""


#: a tiny Tree Transformer for the tests that train their code
TT_TINY = ["--layers", "3", "--d-model", "16", "--heads", "2", "--d-ff", "16"]


def tt_corpus(root: Path, lines) -> Path:
    """A corpus folder as induction_wsj.sh writes it (text/train.txt, data-bin/dict.txt "the cat sat") -> its path."""
    (root / "text").mkdir(parents=True)
    (root / "data-bin").mkdir()
    (root / "data-bin" / "dict.txt").write_text("the 3\ncat 2\nsat 1\n", encoding="utf-8")
    (root / "text" / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


#: 140 lines of 5-15 words: 64-sentence batches cross an epoch's end at update 3
VARIED = [" ".join(("the", "cat", "sat")[(i + j) % 3] for j in range(5 + i % 11)) for i in range(140)]


@needs_their_code
def test_tt_stage_k_is_their_model_after_k_updates(tt, tmp_path):
    import torch
    # 22 tokens a line: nearly every line gets a masked word
    corpus = tt_corpus(tmp_path / "corpus", [" ".join(["the cat sat"] * 7)] * 140)
    out = tmp_path / "out"
    tt.main(["train", "--corpus-dir", str(corpus), "--ref", TT_REF, "--out", str(out), "--updates", "1", "3",
             *TT_TINY])
    one, three = (torch.load(out / f"stage_{k}.pt", weights_only=True) for k in (1, 3))
    theirs = torch.load(out / "model" / "model.pth", weights_only=True)  # their loop saves at step 0: 1 update
    assert theirs["step"] == 0 and (one["step"], three["step"]) == (1, 3)
    assert all(torch.equal(one["state_dict"][k], v) for k, v in theirs["state_dict"].items())
    assert not torch.equal(three["state_dict"]["proj.weight"], theirs["state_dict"]["proj.weight"])
    assert one["size"] == {"layers": 3, "d_model": 16, "heads": 2, "d_ff": 16}
    assert sorted(p.name for p in out.glob("stage_*")) == ["stage_1.pt", "stage_3.pt"]
    before = [(out / f"stage_{k}.pt").stat().st_mtime_ns for k in (1, 3)]
    tt.main(["train", "--corpus-dir", str(corpus), "--ref", TT_REF, "--out", str(out), "--updates", "1", "3"])
    assert [(out / f"stage_{k}.pt").stat().st_mtime_ns for k in (1, 3)] == before  # a rerun trains nothing
    mrg = tmp_path / "x.mrg"
    mrg.write_text("(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))\n(TOP (NP (NN Cat)))\n", encoding="utf-8")
    trees = tmp_path / "x.trees"
    tt.main(["parse", "--ref", TT_REF, "--checkpoint", str(out / "stage_3.pt"), "--dict",
             str(corpus / "data-bin" / "dict.txt"), "--treebank", str(mrg), "--out-trees", str(trees)])
    lines = trees.read_text().splitlines()
    assert len(lines) == 2 and lines[1] == "(X Cat)"
    assert lines[0].replace("(X ", "").replace(")", "").split() == ["The", "cat", "sat"]


@needs_their_code
def test_tt_a_resumed_run_gives_the_uninterrupted_runs_stages(tt, tmp_path):
    """Stages 1 and 5 of one run; then stage 1 alone, and a rerun asking for 3 and 5 that resumes from it (their
    Adam, the random states, the batcher's place in the lines: 140 lines of 64-sentence batches cross an epoch's
    end at update 3): the same weights and Adam moments, exactly, as the uninterrupted run (CPU)."""
    import torch
    corpus = tt_corpus(tmp_path / "corpus", VARIED)

    def train(out, *updates):
        tt.main(["train", "--corpus-dir", str(corpus), "--ref", TT_REF, "--out", str(out), "--updates",
                 *map(str, updates), *TT_TINY])

    train(tmp_path / "whole", 1, 5)
    train(tmp_path / "parts", 1)
    train(tmp_path / "parts", 1, 3, 5)
    whole, parts = (torch.load(tmp_path / d / "stage_5.pt", weights_only=True) for d in ("whole", "parts"))
    assert parts["step"] == 5 and parts["resume"]["optimizer"]["state"][0]["step"] == 5  # Adam went on: 1 + 4
    assert whole["state_dict"].keys() == parts["state_dict"].keys()
    assert all(torch.equal(whole["state_dict"][k], v) for k, v in parts["state_dict"].items())
    moments = [(whole["resume"]["optimizer"]["state"][i], s) for i, s in parts["resume"]["optimizer"]["state"].items()]
    assert all(torch.equal(a["exp_avg_sq"], b["exp_avg_sq"]) for a, b in moments)
    assert parts["resume"]["lines_read"] == whole["resume"]["lines_read"] > 140  # past the first epoch
    one = torch.load(tmp_path / "parts" / "stage_1.pt", weights_only=True)
    assert not torch.equal(one["state_dict"]["proj.weight"], parts["state_dict"]["proj.weight"])


@needs_their_code
def test_tt_recipe_scores_each_stage_before_training_the_next(tmp_path):
    """scripts/recipes/reference_tree_transformer.sh with UPDATES="1 3": stage 1 is trained, parsed and scored
    before stage 3 trains in a slice of its own, resumed from stage 1, so a run stopped between stages keeps the
    scores it has; train.log gathers both slices; rows.txt has a row a stage; a rerun trains and scores nothing."""
    import subprocess
    import sys
    shared, work = tmp_path / "shared", tmp_path / "work"
    (shared / "data" / "wsj22").mkdir(parents=True)
    (shared / "data" / "wsj22" / "wsj22.mrg").write_text(
        "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (NP (DT the) (NN cat)))))\n"
        "(TOP (S (NP (NN Cat)) (VP (VBD sat) (NP (DT the) (NN cat)))))\n", encoding="utf-8")
    tt_corpus(work / "wsj", VARIED)
    out = work / "ref"
    env = dict(os.environ, REF=TT_REF, CORPUS="wsj", UPDATES="1 3", PYTHON=sys.executable, SIZE=" ".join(TT_TINY))
    cmd = ["bash", str(REPO / "scripts" / "recipes" / "reference_tree_transformer.sh"), str(shared), str(work),
           str(out)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    log = (out / "train.log").read_text(encoding="utf-8")
    assert "stages=[1] trained_to=1 size=" in log and "stages=[3] trained_to=3 " in log
    assert log.rstrip().endswith("resumed_from=1")  # the second slice went on from stage 1
    assert (out / "scores_1.txt").stat().st_mtime_ns < (out / "stage_3.pt").stat().st_mtime_ns
    rows = (out / "rows.txt").read_text(encoding="utf-8").splitlines()
    assert [r.split(" uf1=")[0] for r in rows] == ["corpus=wsj updates=1", "corpus=wsj updates=3"]
    for k in (1, 3):
        assert json.loads((out / f"scores_{k}.txt").read_text().splitlines()[-1])["sentences"] == 2
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*_[13].*")}
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and (out / "train.log").read_text(encoding="utf-8") == log
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*_[13].*")} == before


@needs_their_code
def test_tt_our_code_rule_parse_is_their_build_tree(tt):
    """constituent_transformer's --ca-parse-code-rule (min layer 2, threshold 0.8, inner 0.7, from the top layer)
    gives their parse.py's build_tree brackets on 300 random link tables (uniform, and skewed to 1 as a model's
    early links are); the sentence's own span, which the scorer leaves out, is left out of both."""
    import numpy as np

    from fairseq_tree.models.constituent_transformer import parse_links
    their = tt.their_modules(TT_REF)
    rng = np.random.RandomState(0)
    for t in range(300):
        n, layers = rng.randint(2, 15), 6
        links = rng.beta(5, 1, size=(layers, n - 1)) if t % 2 else rng.rand(layers, n - 1)
        theirs = {s for s in their.parse.build_tree(links, layers - 1, 0, n - 1, 0.8) if s[1] - s[0] >= 2}
        ours = set(parse_links(links, "algorithm1", 2, 0.8, 0.7, None, layers - 1))
        assert ours - {(0, n)} == theirs - {(0, n)}, (t, links)


@needs_their_code
def test_tt_code_variant_is_their_model(tt):
    """constituent_transformer with the code variant's flags (link scale 256, C_ii ~ 0, the links' own LayerNorm)
    and --ca-bos-in-chain --lm-head untied, given their model's weights, computes their model: the links a^l of
    every layer and the logits of [CLS] and the words, on a padded batch. Two things of theirs are swapped for
    ours in their model (the rest runs as written): their LayerNorm (unbiased std, eps added to the std) for
    torch's, and their positional table for fairseq's (another sinusoid layout); EOS, which their input lacks,
    sits after our words (no word reads it)."""
    import types

    import torch
    import torch.nn.functional as F
    from fairseq.data import Dictionary

    from fairseq_tree.models import constituent_transformer as ct

    their = tt.their_modules(TT_REF)
    words = ["the", "cat", "sat", "on", "a", "mat"]
    d = Dictionary()
    for w in words:
        d.add_symbol(w)
    dm, L = 16, 3
    torch.manual_seed(0)
    ours = ct.build_standalone(d, "constituent_transformer_tiny", encoder_layers=L, encoder_embed_dim=dm,
                               encoder_attention_heads=2, encoder_ffn_embed_dim=32, ca_link_scale=256.0,
                               ca_code_diagonal=True, ca_own_norm=True, ca_bos_in_chain=True,
                               lm_head="untied").eval()
    # their ids: [PAD] 0, [UNK] 1, [MASK] 2, [CLS] 3, then the words; ours: fairseq's <s> 0 <pad> 1 </s> 2 <unk> 3
    their_of = {d.bos(): 3, d.pad(): 0, d.unk(): 1, **{d.index(w): 4 + i for i, w in enumerate(words)}}
    model = their.solver.Solver._make_model(types.SimpleNamespace(no_cuda=True), 4 + len(words), L, d_model=dm,
                                            d_ff=32, h=2).eval()
    norms = [m for m in model.modules() if type(m).__name__ == "LayerNorm"]
    assert len(norms) == 3 * L + 1  # per layer: the links', the attention's, the FFN's; the final one
    for m in norms:  # torch's LayerNorm in place of theirs
        m.forward = (lambda mm: lambda x: F.layer_norm(x, (dm,), mm.a_2, mm.b_2, 1e-5))(m)
    enc = ours.encoder
    with torch.no_grad():
        lut, proj = model.word_embed[0].lut.weight, model.proj
        for o, t in their_of.items():
            enc.embed_tokens.weight[o] = lut[t]
            enc.lm_head.weight[o] = proj.weight[t]
            enc.lm_head.bias[o] = proj.bias[t]
        for mine, th in zip(enc.layers, model.layers):
            g, sa, ff = th.group_attn, th.self_attn, th.feed_forward
            mine.attn.link_proj.weight.copy_(torch.cat([g.linear_query.weight, g.linear_key.weight]))
            mine.attn.link_proj.bias.copy_(torch.cat([g.linear_query.bias, g.linear_key.bias]))
            mine.attn.in_proj.weight.copy_(torch.cat([sa.linears[i].weight for i in range(3)]))
            mine.attn.in_proj.bias.copy_(torch.cat([sa.linears[i].bias for i in range(3)]))
            mine.attn.out_proj.load_state_dict(sa.linears[3].state_dict())
            for norm, their_norm in ((mine.attn.link_norm, g.norm), (mine.attn_norm, th.sublayer[0].norm),
                                     (mine.ffn_norm, th.sublayer[1].norm)):
                norm.weight.copy_(their_norm.a_2)
                norm.bias.copy_(their_norm.b_2)
            mine.fc1.load_state_dict(ff.w_1.state_dict())
            mine.fc2.load_state_dict(ff.w_2.state_dict())
        enc.final_norm.weight.copy_(model.norm.a_2)
        enc.final_norm.bias.copy_(model.norm.b_2)
    sents = [words, words[1:4], words[:2]]
    T = len(words) + 2
    src = torch.tensor([[d.bos()] + [d.index(w) for w in s] + [d.eos()] + [d.pad()] * (T - len(s) - 2)
                        for s in sents])
    pos = enc.embed_positions(src)  # fairseq's table (zero rows at padding), handed to their model
    theirs_in = torch.tensor([[their_of[int(t)] if int(t) != d.eos() else 0 for t in row] for row in src])
    with torch.no_grad():
        x_theirs = model.word_embed[0](theirs_in) + pos  # their Embeddings (x sqrt(d)), our positions, eval
        mask = (theirs_in != 0).unsqueeze(-2).int()
        group_prob, links_theirs = 0.0, []
        for layer in model.layers:
            x_theirs, group_prob, break_prob = layer(x_theirs, mask, group_prob)
            links_theirs.append(break_prob)
        logits_theirs = model.proj(model.norm(x_theirs))
        logits, extra = ours(src)
    chain = theirs_in != 0  # [CLS] and the words
    for l in range(L):
        for b, s in enumerate(sents):
            n = len(s) + 1  # [CLS] + words
            expected = torch.stack([links_theirs[l][b, t, t + 1] for t in range(n - 1)])
            assert torch.allclose(extra["link_probs"][l][b, :n - 1], expected, atol=1e-5)
    idx = torch.tensor(sorted(their_of))
    mapped = logits_theirs[..., torch.tensor([their_of[int(o)] for o in idx])]
    assert torch.allclose(logits[..., idx][chain], mapped[chain], atol=1e-4)
