"""scripts/reference/authors_structformer.py, the data adapter of the authors' StructFormer runs: the batch count
their batchify makes (the recipe turns update counts into epochs with it), their nested-list trees written for
fairseq-tree-score, and our dictionary's words handed to their Dictionary in order; with their code
(FAIRSEQ_TREE_REF_SF, a local copy; skipped without), that structformer with the code flags computes their model
given its weights and that the recipe's last checkpoint is their model after the epochs trained. The Tree
Transformer's adapter: test_reference_adapter_tt.py."""

import os

import pytest
from conftest import REPO, load_script


@pytest.fixture(scope="module")
def adapter():
    return load_script(REPO / "scripts" / "reference" / "authors_structformer.py")


def test_train_seeds_pythons_random_and_hands_their_main_its_arguments(adapter, tmp_path, capsys):
    """``train`` runs REF/structformer/main.py as ``python -m structformer.main`` would, after random.seed: a stand-in
    main.py (their code is not in CI) prints what it sees: its name, argv, and the first draws of ``random``."""
    import random
    import sys

    main_py = tmp_path / "structformer" / "main.py"
    main_py.parent.mkdir()
    (main_py.parent / "__init__.py").write_text("")
    main_py.write_text("import random, sys\nprint(__name__, sys.argv[1:], [random.random() for _ in range(3)])\n")
    decoy = tmp_path / "decoy" / "structformer"  # another importable structformer: --ref's copy must win
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("")
    (decoy / "main.py").write_text("print('decoy')\n")
    path, argv = list(sys.path), list(sys.argv)
    sys.path.insert(0, str(decoy.parent))
    try:
        adapter.main(["train", "--ref", str(tmp_path), "--py-seed", "1111", "--", "--data", "d", "--seed", "7"])
        for name in ("structformer.main", "structformer"):
            sys.modules.pop(name, None)
        sys.argv = ["authors_structformer.py", "train", "--ref", str(tmp_path), "--py-seed", "2111", "--"]
        adapter.main()  # the command line's arguments
    finally:
        sys.path[:], sys.argv = path, argv
        for name in ("structformer.main", "structformer"):
            sys.modules.pop(name, None)
    first, second = capsys.readouterr().out.splitlines()
    draws = {seed: random.Random(seed) for seed in (1111, 2111)}
    assert first == f"__main__ ['--data', 'd', '--seed', '7'] {[draws[1111].random() for _ in range(3)]}"
    assert second == f"__main__ [] {[draws[2111].random() for _ in range(3)]}"
    with pytest.raises(SystemExit, match="no structformer/main.py there"):
        adapter.main(["train", "--ref", str(tmp_path / "nowhere"), "--py-seed", "1", "--"])
    for missing in (["--ref", str(tmp_path)], ["--py-seed", "1"]):
        with pytest.raises(SystemExit) as e:
            adapter.main(["train", *missing, "--"])
        assert e.value.code == 2
    # the other commands are dispatched too (each stops at its first check without their code or the recipe's data)
    with pytest.raises(SystemExit, match="missing \\(run scripts/recipes/induction_wsj.sh"):
        adapter.main(["prepare", "--corpus-dir", str(tmp_path / "c"), "--ref", str(tmp_path), "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="no structformer/structformer.py there"):
        adapter.main(["parse", "--ref", str(tmp_path), *(x for k in ("checkpoint", "treebank", "dict", "out-trees",
                                                                      "out-deps") for x in (f"--{k}", "f"))])
    with pytest.raises(SystemExit):
        adapter.main(["train", "--help"])
    assert " train --ref REF --py-seed N [--last PATH] -- THEIR_MAIN_ARGS\n" in capsys.readouterr().out


def test_train_last_keeps_the_model_after_each_epoch_not_the_best(adapter, tmp_path):
    """``train --last``: a stand-in main.py shaped as theirs (module globals model, criterion, optimizer, scheduler;
    a best-only save; ``scheduler.step(val_loss)`` at each epoch's end) runs three epochs whose validation losses
    are 3, 1, 2; the weight counts the epochs. The --last file holds the model after epoch 3 (the best: epoch 2)
    and the scheduler with one bad epoch; another ReduceLROnPlateau stepped from the same module (not their
    ``scheduler``) writes nothing; torch's class is restored afterwards."""
    import sys

    import torch
    from torch.optim.lr_scheduler import ReduceLROnPlateau

    main_py = tmp_path / "structformer" / "main.py"
    main_py.parent.mkdir()
    (main_py.parent / "__init__.py").write_text("")
    main_py.write_text(
        "import sys, torch\n"
        "import torch.optim.lr_scheduler as lr_scheduler\n"
        "model = torch.nn.Linear(1, 1, bias=False)\n"
        "torch.nn.init.zeros_(model.weight)\n"
        "criterion = 'their criterion'\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scheduler = lr_scheduler.ReduceLROnPlateau(optimizer, 'min', 0.5, patience=2, threshold=0)\n"
        "other = lr_scheduler.ReduceLROnPlateau(torch.optim.SGD(model.parameters(), lr=0.1))\n"
        "best = None\n"
        "for val_loss in (3.0, 1.0, 2.0):\n"
        "    with torch.no_grad():\n"
        "        model.weight += 1\n"
        "    if best is None or val_loss < best:\n"
        "        best = val_loss\n"
        "        torch.save([model, criterion, optimizer, scheduler], sys.argv[1])\n"
        "    scheduler.step(val_loss)\n"
        "with torch.no_grad():\n"
        "    model.weight += 100\n"
        "other.step(0.0)\n")
    last, best = tmp_path / "last.pt", tmp_path / "best.pt"
    original, path, argv = ReduceLROnPlateau.step, list(sys.path), list(sys.argv)
    try:
        adapter.main(["train", "--ref", str(tmp_path), "--py-seed", "1", "--last", str(last), "--", str(best)])
    finally:
        sys.path[:], sys.argv = path, argv  # train puts --ref first on the path: the stand-in would shadow theirs
        for name in ("structformer.main", "structformer"):
            sys.modules.pop(name, None)
    assert ReduceLROnPlateau.step is original
    model, criterion, optimizer, scheduler = torch.load(last, weights_only=False)
    assert model.weight.item() == 3.0 and criterion == "their criterion"
    assert scheduler.num_bad_epochs == 1 and scheduler.best == 1.0 and scheduler.last_epoch == 3
    assert optimizer.param_groups[0]["params"][0] is model.weight  # one pickle: the optimizer holds this model
    assert torch.load(best, weights_only=False)[0].weight.item() == 2.0  # their own file: the best epoch's
    assert not (tmp_path / "last.pt.tmp").exists()


def test_batches_as_their_batchify(adapter):
    # sorted 1 2 3 4 5 6: batches close once they hold >= 5 words: [1 2 3] [4 5] [6] -> 3
    assert adapter.batches([6, 1, 5, 2, 4, 3], 5) == 3
    assert adapter.batches([5, 5], 5) == 2  # each sentence fills a batch alone
    assert adapter.batches([1, 1], 5) == 1  # a last batch that never fills still counts
    assert adapter.batches([], 5) == 0


def test_bracket_writes_gold_spelling(adapter):
    words = ["The", "cat", "sat", "down"]
    assert adapter.bracket([[0, 1], [2, 3]], words) == "(X (X The cat) (X sat down))"
    assert adapter.bracket([0, 1, [2, 3]], words) == "(X The cat (X sat down))"  # n-ary where distances tie


def test_fairseq_words_in_order_without_specials(adapter, tmp_path):
    d = tmp_path / "dict.txt"
    d.write_text("the 10\n<unk> 3\ncat 2\nmadeupword0000 0\n", encoding="utf-8")
    assert adapter.fairseq_words(d) == ["the", "cat"]
    d.write_text("the 10\nbroken\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="dict.txt:2"):
        adapter.fairseq_words(d)


# ------------------------------------------- the authors' StructFormer (google-research structformer/)
#: a local copy of google-research (the folder that holds structformer/) for the tests that run their code
SF_REF = os.environ.get("FAIRSEQ_TREE_REF_SF")


@pytest.mark.skipif(not SF_REF, reason="FAIRSEQ_TREE_REF_SF (their google-research structformer code) unset")
def test_sf_code_variant_is_their_model(adapter):
    """structformer with VARIANTS=code's flags (calibration, parser LayerNorm, LeakyReLU, learned positions,
    attention dropout 0, unscaled embeddings, linear head) given their model's weights computes their StructFormer:
    per sentence in eval (their parse: one sentence a batch) the distances, heights, p_D (their ``head``) and
    logits of the words; and in training on a padded batch (dropout 0 in both; --sf-calibrate-batch, their batch-max
    margin) the masked-LM loss and the gradient of every parameter. Their input has no BOS/EOS: our words sit one
    position later, so our learned position table gets their rows shifted by one."""
    import torch
    import torch.nn.functional as F
    from fairseq.data import Dictionary

    from fairseq_tree.models import structformer as sfm

    their = adapter._their(SF_REF, "structformer")
    words = "the cat sat on a mat dog ran".split()
    d = Dictionary()
    for w in words:
        d.add_symbol(w)
    mask_idx = d.add_symbol("<mask>")
    dm, L, H, pad = 16, 2, 2, d.pad()
    torch.manual_seed(0)
    ours = sfm.build_standalone(
        d, "structformer_tiny", encoder_layers=L, encoder_embed_dim=dm, encoder_attention_heads=H,
        encoder_ffn_embed_dim=4 * dm, sf_conv_layers=3, sf_conv_size=9, sf_calibrate=True, sf_parser_layernorm=True,
        sf_leaky_relu=True, encoder_learned_pos=True, attention_dropout=0.0, no_scale_embedding=True,
        lm_head="linear", sf_calibrate_batch=True, dropout=0.0, activation_dropout=0.0)
    model = their.StructFormer(dm, L, len(d), nhead=H, dropout=0.0, dropatt=0.0, relative_bias=False, pos_emb=True,
                               pad=pad, n_parser_layers=3, conv_size=9, relations=["head", "child"],
                               weight_act="softmax")
    enc, P = ours.encoder, ours.encoder.parser
    pairs = [(P.convs[i], model.parser_layers[i][0].conv) for i in range(3)] + [
        (P.distance_out, model.distance_ff[3]), (P.height_hidden, model.height_ff[0]),
        (P.height_out, model.height_ff[3])]
    for mine, th in zip(enc.layers, model.layers):
        pairs += [(mine.attn.out_proj, th.self_attn.out_proj), (mine.attn_norm, th.norm),
                  (mine.ffn_norm, th.feedforward[0]), (mine.fc1, th.feedforward[1]), (mine.fc2, th.feedforward[4])]
    pairs.append((enc.final_norm, model.norm))
    with torch.no_grad():
        for mine, th in pairs:
            mine.load_state_dict(th.state_dict())
        enc.embed_tokens.weight.copy_(model.emb.weight)
        enc.embed_positions.weight[pad + 2:pad + 2 + 20] = model.pos_emb.weight[:20]
        w = model.distance_ff[0].conv.weight  # [d, d, 2] over (s_k, s_k+1) -> Linear(2d, d) over [s_k; s_k+1]
        P.distance_hidden.weight.copy_(torch.cat([w[:, :, 0], w[:, :, 1]], 1))
        P.distance_hidden.bias.copy_(model.distance_ff[0].conv.bias)
        P.log_scale.copy_(model._scaler)
        for i, (mine, th) in enumerate(zip(enc.layers, model.layers)):
            a = th.self_attn
            mine.attn.in_proj.weight.copy_(torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight]))
            mine.attn.in_proj.bias.copy_(torch.cat([a.q_proj.bias, a.k_proj.bias, a.v_proj.bias]))
            mine.attn.rel_logits.copy_(model._rel_weight[i])
        enc.lm_head.bias.copy_(model.output_layer.bias)
    sents = [words, words[1:5], words[:2], words[2:7]]
    T = len(words)
    x = torch.tensor([[d.index(w) for w in s] + [pad] * (T - len(s)) for s in sents])  # theirs: words only
    src = torch.cat([torch.full((len(sents), 1), d.bos()), x, torch.full((len(sents), 1), pad)], 1)
    for b, s in enumerate(sents):
        src[b, len(s) + 1] = d.eos()
    ours.eval(), model.eval()
    with torch.no_grad():
        for b, s in enumerate(sents):
            n = len(s)
            out, st = model(x[b:b + 1, :n], torch.arange(n)[None])
            logits, extra = ours(src[b:b + 1, :n + 2])
            torch.testing.assert_close(extra["distance"][0, 1:n], st["distance"][0, :n - 1], atol=1e-5, rtol=0)
            torch.testing.assert_close(extra["height"][0, 1:n + 1], st["height"][0], atol=1e-5, rtol=0)
            torch.testing.assert_close(extra["dependency"][0, 1:n + 1, 1:n + 1], st["head"][0], atol=1e-5, rtol=0)
            torch.testing.assert_close(logits[0, 1:n + 1], out, atol=1e-5, rtol=0)
    ours.train(), model.train()
    chosen = (torch.arange(T) % 3 == 1)[None, :] & (x != pad)
    target = x.masked_fill(~chosen, pad)
    out, _ = model(x.masked_fill(chosen, mask_idx), torch.arange(T)[None])
    theirs_loss = F.cross_entropy(out, target.reshape(-1), ignore_index=pad)
    src_in = src.clone()
    src_in[:, 1:T + 1] = x.masked_fill(chosen, mask_idx)
    logits, _ = ours(src_in)
    ours_loss = F.cross_entropy(logits[:, 1:T + 1].reshape(-1, len(d)), target.reshape(-1), ignore_index=pad)
    torch.testing.assert_close(ours_loss, theirs_loss)
    theirs_loss.backward()
    ours_loss.backward()
    grads = [(enc.embed_tokens.weight, model.emb.weight.grad), (P.log_scale, model._scaler.grad),
             (enc.lm_head.bias, model.output_layer.bias.grad)]
    grads += [(mine.weight, th.weight.grad) for mine, th in pairs]
    grads += [(mine.attn.rel_logits, model._rel_weight.grad[i]) for i, mine in enumerate(enc.layers)]
    for mine, expected in grads:
        torch.testing.assert_close(mine.grad, expected, atol=1e-6, rtol=1e-4)
    torch.testing.assert_close(P.distance_hidden.weight.grad[:, :dm], model.distance_ff[0].conv.weight.grad[:, :, 0])
    torch.testing.assert_close(enc.embed_positions.weight.grad[pad + 2:pad + 2 + T], model.pos_emb.weight.grad[:T])


@pytest.mark.skipif(not SF_REF, reason="FAIRSEQ_TREE_REF_SF (their google-research structformer code) unset")
def test_sf_last_is_their_model_after_the_epochs_trained(adapter, tmp_path):
    """Their main.py through ``prepare`` and ``train --last`` on a tiny corpus, as the recipe runs it: the --last
    file after 3 epochs holds Adam at 3 x the batches an epoch (prepare's count) and their scheduler at epoch 3; a
    stage resumed from it for 2 more epochs reaches 5 x. (Their --save file is the lowest validation loss so far.)"""
    import subprocess
    import sys

    import torch

    corpus, out = tmp_path / "corpus", tmp_path / "out"
    (corpus / "text").mkdir(parents=True)
    (corpus / "data-bin").mkdir()
    words = "the cat sat on a mat dog ran".split()
    (corpus / "data-bin" / "dict.txt").write_text("".join(f"{w} {9 - i}\n" for i, w in enumerate(words)))
    lines = [" ".join(words[(i + j) % 8] for j in range(3 + i % 6)) for i in range(60)]
    (corpus / "text" / "train.txt").write_text("\n".join(lines) + "\n")
    (corpus / "text" / "valid.txt").write_text("\n".join(lines[:10]) + "\n")
    script = str(REPO / "scripts" / "reference" / "authors_structformer.py")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def run(*argv, **kw):
        r = subprocess.run([sys.executable, script, *argv], env=env, capture_output=True, text=True, **kw)
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stdout

    per_epoch = int(run("prepare", "--corpus-dir", str(corpus), "--ref", SF_REF, "--out", str(out), "--batch-size",
                        "40").split("batches_per_epoch=")[1])
    env.update(PYTHONPATH=str(out / "shim"), NLTK_DATA=str(out / "nltk_data"), TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")
    assert per_epoch > 3

    def train(epochs, last, resume=None):
        run("train", "--ref", ".", "--py-seed", "1", "--last", str(last), "--", "--data", str(out / "data"),
            "--nhid", "16", "--nlayers", "2", "--nheads", "2", "--n_parser_layers", "3", "--pos_emb", "--batch_size",
            "40", "--epochs", str(epochs), "--save", str(tmp_path / "best.pt"),
            *(["--resume", str(resume)] if resume else []), cwd=SF_REF)
        sys.path.insert(0, SF_REF)
        try:
            _, _, optimizer, scheduler = torch.load(last, weights_only=False)
        finally:
            sys.path.remove(SF_REF)
        return optimizer.state_dict()["state"][0]["step"], scheduler.last_epoch

    assert train(3, tmp_path / "e3.pt") == (3 * per_epoch, 3)
    assert train(2, tmp_path / "e5.pt", resume=tmp_path / "e3.pt") == (5 * per_epoch, 5)
