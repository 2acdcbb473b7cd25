"""tree2seq through fairseq: batch invariance, incremental decoding, gradients, beam search, CLIs."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import BIN, REPO, SHARED, assert_safe_checkpoint
from fairseq import options, tasks
from fairseq.dataclass.configs import GenerationConfig

pytestmark = pytest.mark.slow(minutes=3.5)  # measured: the file on one xdist worker (2026-11-25)

USER_DIR = str(REPO / "fairseq_tree")
PTB = SHARED / "data" / "ptb_sample"


@pytest.fixture(scope="module")
def data_bin(tmp_path_factory):
    """64 PTB trees -> their lower-cased words (a learnable 'translation'), BPE 500, joined dictionary."""
    from fairseq_tree.cli.preprocess import cli_main

    d = tmp_path_factory.mktemp("t2s")
    trees = (PTB / "valid.mrg").read_text().splitlines()[:64]
    text = [t.lower() for t in (PTB / "valid.txt").read_text().splitlines()[:64]]
    # one single-word sentence, so m = 0 is exercised end to end
    trees[5], text[5] = "(NP (NNS Yields))", "yields"
    for split in ("train", "valid"):
        (d / f"{split}.en").write_text("\n".join(trees) + "\n")
        (d / f"{split}.xx").write_text("\n".join(text) + "\n")
    assert cli_main(["-s", "en", "-t", "xx", "--trainpref", str(d / "train"), "--validpref", str(d / "valid"),
                     "--parser", "given", "--bpe-merges", "500", "--joined-dictionary",
                     "--destdir", str(d / "bin")]) == 0
    return d / "bin"


def build(data_bin, *extra):
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [
        str(data_bin), "--user-dir", USER_DIR, "--task", "tree_translation", "--arch", "tree2seq_tiny",
        "--share-all-embeddings", "--dropout", "0", "--cpu", *extra])
    task = tasks.setup_task(args)
    task.load_dataset("train")
    torch.manual_seed(0)
    model = task.build_model(args)
    return task, model


def encoder_input(batch):
    return {k: v for k, v in batch["net_input"].items() if k != "prev_output_tokens"}


def real_rows(encoder_out, b):
    """The encoder output rows of sentence b: real leaves, then real nodes. [n + m, C]"""
    x = encoder_out["encoder_out"][0][:, b]
    return x[~encoder_out["encoder_padding_mask"][0][b]]


@pytest.mark.parametrize("extra", [[], ["--encoder-normalize-before", "--decoder-normalize-before"],
                                   ["--tree-vertical-index", "depth", "--tree-mean-without-leaf",
                                    "--tree-leaf-weights", "per-head"],
                                   ["--no-hierarchical-embeddings", "--no-subtree-mask"]])
def test_batch_invariance_encoder_and_translation(data_bin, extra):
    task, model = build(data_bin, *extra)
    model.eval()
    ds = task.datasets["train"]
    batch = ds.collater([ds[i] for i in range(12)])
    order = batch["id"].tolist()
    generator = task.build_generator([model], GenerationConfig(beam=3, max_len_b=12))
    with torch.no_grad():
        enc_batch = model.encoder(**encoder_input(batch))
        hyp_batch = task.inference_step(generator, [model], batch)
        for i in (5, 0, 7):  # 5 is the single-word sentence
            alone = ds.collater([ds[i]])
            enc_alone = model.encoder(**encoder_input(alone))
            b = order.index(i)
            torch.testing.assert_close(real_rows(enc_alone, 0), real_rows(enc_batch, b), atol=1e-5, rtol=1e-5)
            hyp_alone = task.inference_step(generator, [model], alone)
            assert hyp_alone[0][0]["tokens"].tolist() == hyp_batch[b][0]["tokens"].tolist()
            torch.testing.assert_close(hyp_alone[0][0]["score"], hyp_batch[b][0]["score"], atol=1e-4, rtol=1e-4)


def test_incremental_decoding_equals_full(data_bin):
    task, model = build(data_bin)
    model.eval()
    ds = task.datasets["train"]
    batch = ds.collater([ds[i] for i in range(6)])
    prev = batch["net_input"]["prev_output_tokens"]
    with torch.no_grad():
        enc = model.encoder(**encoder_input(batch))
        full, _ = model.decoder(prev, encoder_out=enc)
        state = {}
        steps = []
        for t in range(prev.size(1)):
            out, _ = model.decoder(prev[:, : t + 1], encoder_out=enc, incremental_state=state)
            steps.append(out[:, -1])
    real = prev.ne(task.target_dictionary.pad())  # padded steps differ (positions) and are never used
    assert real.sum() > 100
    torch.testing.assert_close(torch.stack(steps, 1)[real], full[real], atol=1e-5, rtol=1e-5)


def test_encoder_input_scales_leaf_and_node_label_embeddings(data_bin):
    """The encoder's layer-0 input: leaves sqrt(d) E_tok[w] + positions, nodes sqrt(d) E_label[l] (their own
    table, no positions; Nguyen et al. scale both as the Transformer does). tree2seq_tiny: d = 64, sqrt(d) = 8."""
    task, model = build(data_bin)
    model.eval()
    ds = task.datasets["train"]
    inp = encoder_input(ds.collater([ds[i] for i in range(4)]))
    with torch.no_grad():
        enc = model.encoder(**inp, return_all_hiddens=True)
        x0 = enc["encoder_states"][0].transpose(0, 1)  # [B, N + M, C], before the first layer
        N = inp["src_tokens"].size(1)
        nodes, tokens = inp["src_nodes"], inp["src_tokens"]
        real_nodes = nodes.ne(task.label_dictionary.pad())
        real_leaves = tokens.ne(task.source_dictionary.pad())
        assert model.encoder.embed_labels.embedding_dim == 64 and real_nodes.sum() > 20
        labels = model.encoder.embed_labels.weight[nodes]
        torch.testing.assert_close(x0[:, N:][real_nodes], 8.0 * labels[real_nodes], atol=1e-6, rtol=0)
        words = model.encoder.embed_tokens.weight[tokens]
        positions = model.encoder.embed_positions(tokens)
        torch.testing.assert_close(x0[:, :N][real_leaves], (8.0 * words + positions)[real_leaves], atol=1e-5, rtol=0)


def test_max_source_positions_counts_leaves_and_nodes(tmp_path):
    """--max-source-positions bounds leaves + nodes (the length the encoder attends over), not the leaves alone:
    the three trees have (n, m) = (4, 2), (3, 1), (3, 2), i.e. 6, 4 and 5 positions."""
    from fairseq_tree.cli.preprocess import cli_main

    trees = ["(S (NP (DT The) (NN dog)) (VP (VBD barked)) (. .))", "(S (NP (PRP It)) (VP (VBD rained)) (. .))",
             "(S (NP (DT A) (NN cat)) (VP (VBD sat)))"]
    (tmp_path / "train.en").write_text("\n".join(trees) + "\n")
    (tmp_path / "train.xx").write_text("der hund bellte .\nes regnete .\neine katze sass\n")
    assert cli_main(["-s", "en", "-t", "xx", "--trainpref", str(tmp_path / "train"), "--parser", "given",
                     "--destdir", str(tmp_path / "bin")]) == 0
    for max_source, kept in ((6, [0, 1, 2]), (5, [1, 2]), (4, [1]), (3, [])):
        args = options.parse_args_and_arch(options.get_training_parser(), [
            str(tmp_path / "bin"), "--user-dir", USER_DIR, "--task", "tree_translation", "--arch", "tree2seq_tiny",
            "--max-source-positions", str(max_source), "--cpu"])
        task = tasks.setup_task(args)
        task.load_dataset("train")
        ds = task.datasets["train"]
        itr = task.get_batch_iterator(ds, max_tokens=100, max_positions=task.max_positions(),
                                      ignore_invalid_inputs=True)
        ids = sorted(i for batch in itr.next_epoch_itr(shuffle=False) for i in batch["id"].tolist())
        assert ids == kept, max_source
    assert [int(ds.size(i)[0]) for i in range(3)] == [6, 4, 5]  # batching by tokens counts the same


def test_gradients_reach_tree_parameters(data_bin):
    task, model = build(data_bin)
    ds = task.datasets["train"]
    batch = ds.collater([ds[i] for i in range(8)])
    out, _ = model(**batch["net_input"])
    torch.nn.functional.cross_entropy(out.transpose(1, 2), batch["target"], ignore_index=1).backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    used_labels = batch["net_input"]["src_nodes"].unique()
    assert grads["encoder.embed_labels.weight"][used_labels[used_labels != 1]].abs().sum(-1).gt(0).all()
    for prefix in ("encoder.layers.0.self_attn.accumulation", "decoder.layers.1.encoder_attn.attn.accumulation"):
        for name in ("weight_proj.weight", "vertical_embed.weight", "horizontal_embed.weight"):
            assert grads[f"{prefix}.{name}"].abs().sum() > 0, f"{prefix}.{name}"


def _sh(*cmd, stdin=None, env=None):
    env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    env.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, input=stdin, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def test_tiny_model_overfits_through_the_clis(data_bin, tmp_path):
    """fairseq-train + fairseq-generate (beam, sacrebleu) + fairseq-interactive on our checkpoints."""
    ckpt = tmp_path / "ckpt"
    _sh(BIN / "fairseq-train", data_bin, "--user-dir", USER_DIR, "--task", "tree_translation",
        "--arch", "tree2seq_tiny", "--share-all-embeddings", "--optimizer", "adam", "--lr", "5e-3",
        "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "50", "--max-tokens", "4000", "--max-update", "250",
        "--dropout", "0", "--criterion", "cross_entropy", "--cpu", "--num-workers", "0", "--seed", "1",
        "--disable-validation", "--no-epoch-checkpoints", "--save-dir", ckpt, "--log-format", "simple")
    out = _sh(BIN / "fairseq-generate", data_bin, "--user-dir", USER_DIR, "--task", "tree_translation",
              "--path", ckpt / "checkpoint_last.pt", "--gen-subset", "train", "--beam", "5", "--batch-size", "64",
              "--cpu", "--remove-bpe", "--scoring", "sacrebleu")
    bleu = float(re.search(r"BLEU = ([\d.]+)", out).group(1))
    assert bleu > 90, out[-1500:]
    # interactive: one bracketed tree per line
    out = _sh(BIN / "fairseq-interactive", data_bin, "--user-dir", USER_DIR, "--task", "tree_translation",
              "--path", ckpt / "checkpoint_last.pt", "--beam", "5", "--cpu", "--remove-bpe",
              stdin=(PTB / "valid.mrg").read_text().splitlines()[0] + "\n")
    hyp = [line.split("\t")[2] for line in out.splitlines() if line.startswith("D-0")]
    from fairseq_tree.text.tokenize import Tokenizer

    ref = Tokenizer("moses", "xx")((PTB / "valid.txt").read_text().splitlines()[0].lower())
    assert hyp == [" ".join(ref)]
    # the hub interface gives fairseq-interactive's detokenized translations (D- lines with --tokenizer moses)
    from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel

    trees = (PTB / "valid.mrg").read_text().splitlines()[:4]
    out = _sh(BIN / "fairseq-interactive", data_bin, "--user-dir", USER_DIR, "--task", "tree_translation",
              "--path", ckpt / "checkpoint_last.pt", "--beam", "5", "--cpu", "--remove-bpe", "--tokenizer", "moses",
              "-s", "en", "-t", "xx", stdin="\n".join(trees) + "\n")
    cli = [line.split("\t")[2] for line in out.splitlines() if line.startswith("D-")]
    hub = Tree2SeqModel.from_pretrained(str(ckpt), "checkpoint_last.pt", str(data_bin))
    assert hub.translate(trees, beam=5) == cli and len(cli) == 4
    assert hub.translate(trees[1], beam=5) == cli[1]
    # attention for the viewer: encoder self-attention over [leaves; nodes] per layer, cross-attention on them
    (item,) = hub.attention(trees[1:2], beam=5)
    leaves, cols = item["words"], item["cols"]
    n_nodes = len(cols) - len(leaves)
    assert cols[:len(leaves)] == leaves and n_nodes >= 1 and cols[-1].endswith(f" 0-{len(leaves)}")
    layers = [k for k in item["maps"] if k.startswith("encoder layer")]
    assert layers and all(len(item["maps"][k]) == len(cols) for k in layers)
    assert all(abs(sum(row) - 1) < 0.01 for k in layers for row in item["maps"][k])  # a distribution per query
    cross = item["maps"]["cross-attention"]
    target = torch.tensor([hub.tgt_dict.index(x) for x in cross["rows"]])  # the best translation's pieces, EOS
    assert cross["cols"] == cols and cross["rows"][-1] == "</s>" and hub.decode(target) == cli[1]
    assert all(len(row) == len(cols) and abs(sum(row) - 1) < 0.01 for row in cross["v"])
    page = hub.view(trees[1:2], beam=5)
    rec = page.data["sentences"][0]
    assert len(rec["trees"][0]["n"]) == n_nodes and [a["title"] for a in rec["att"]] == layers + ["cross-attention"]


def test_average_last_update_checkpoints_then_generate(data_bin, tmp_path):
    """fairseq-tree-average on a real run's update checkpoints: the last 3 under the bound, their mean exactly,
    and fairseq-generate decodes with the result."""
    ckpt = tmp_path / "ckpt"
    _sh(BIN / "fairseq-train", data_bin, "--user-dir", USER_DIR, "--task", "tree_translation",
        "--arch", "tree2seq_tiny", "--share-all-embeddings", "--optimizer", "adam", "--lr", "1e-3",
        "--batch-size", "8", "--max-update", "12", "--save-interval-updates", "3", "--keep-interval-updates", "4",
        "--criterion", "cross_entropy", "--cpu", "--num-workers", "0", "--seed", "1", "--disable-validation",
        "--no-epoch-checkpoints", "--save-dir", ckpt, "--log-format", "simple")
    by_update = {int(re.match(r"checkpoint_\d+_(\d+)\.pt", p.name).group(1)): p for p in ckpt.glob("checkpoint_*_*.pt")}
    assert sorted(by_update) == [3, 6, 9, 12]
    out = _sh(BIN / "fairseq-tree-average", "--inputs", ckpt, "--num-update-checkpoints", "3",
              "--checkpoint-upper-bound", "11", "--output", tmp_path / "avg.pt")
    listed = [line.strip() for line in out.splitlines() if line.startswith("  /")]
    assert listed == [str(by_update[u]) for u in (9, 6, 3)]
    states = [assert_safe_checkpoint(by_update[u]) for u in (9, 6, 3)]
    avg = assert_safe_checkpoint(tmp_path / "avg.pt")
    assert avg["model"].keys() == states[0]["model"].keys()
    for k, v in avg["model"].items():
        torch.testing.assert_close(v, sum(s["model"][k] for s in states) / 3, msg=k)
    assert avg["optimizer_history"] == states[0]["optimizer_history"]  # the newest one's state
    emb = "encoder.embed_tokens.weight"
    assert not torch.equal(avg["model"][emb], states[0]["model"][emb])
    gen = _sh(BIN / "fairseq-generate", data_bin, "--user-dir", USER_DIR, "--task", "tree_translation",
              "--path", tmp_path / "avg.pt", "--gen-subset", "valid", "--beam", "5", "--batch-size", "64", "--cpu")
    assert len(re.findall(r"^H-\d+", gen, flags=re.M)) == 64


def test_distributed_cpu_equals_update_freq(data_bin, tmp_path):
    """2 CPU ranks (gloo, legacy_ddp) end with the weights of 1 process with --update-freq 2 (dropout 0),
    and --check-replica-sync asserts every update that both ranks hold identical weights."""
    common = [data_bin, "--user-dir", USER_DIR, "--task", "tree_translation", "--arch", "tree2seq_tiny",
              "--share-all-embeddings", "--optimizer", "adam", "--lr", "1e-3", "--batch-size", "8",
              "--max-update", "4", "--dropout", "0", "--criterion", "cross_entropy", "--seed", "3",
              "--num-workers", "0", "--disable-validation", "--no-epoch-checkpoints", "--log-format", "simple"]
    env_bin = dict(FAIRSEQ_TRAIN=str(BIN / "fairseq-train"))
    script = REPO / "scripts" / "recipes" / "train_distributed_cpu.sh"
    dist = _sh("bash", script, "2", *common, "--check-replica-sync", "1",
               "--save-dir", tmp_path / "dist", env=env_bin)
    assert "training on 2 devices" in dist
    assert dist.count("weights identical on 2 ranks") == 4  # logged by rank 0 (fairseq silences the others)
    _sh(BIN / "fairseq-train", *common, "--cpu", "--update-freq", "2", "--save-dir", tmp_path / "single")
    a = assert_safe_checkpoint(tmp_path / "dist" / "checkpoint_last.pt")["model"]
    b = assert_safe_checkpoint(tmp_path / "single" / "checkpoint_last.pt")["model"]
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=1e-6, rtol=0, msg=k)


def test_attention_share_table4_with_uniform_cross_attention(data_bin):
    """fairseq-tree-attention-share (paper Table 4). With every cross-attention query projection zeroed
    the attention is uniform over a sentence's m + n source positions, so Target->Nodes is the mean, over target
    tokens, of m / (m + n) of their sentence; Leaves/Nodes counts the positions of the binarized data."""
    from fairseq_tree.cli import attention_share as script

    task, model = build(data_bin)
    with torch.no_grad():
        for layer in model.decoder.layers:
            layer.encoder_attn.attn.q_proj.weight.zero_()
            layer.encoder_attn.attn.q_proj.bias.zero_()
    ds = task.datasets["train"]
    leaves = [len(ds.src[i]) for i in range(len(ds))]
    nodes = [len(ds.nodes[i]) for i in range(len(ds))]
    targets = [len(ds.tgt[i]) for i in range(len(ds))]  # tokens + EOS: the decoder's positions
    share = sum(t * m / (m + n) for t, m, n in zip(targets, nodes, leaves)) / sum(targets)
    r = script.attention_share(model.eval(), task, "train", max_tokens=2000)
    assert r["leaves_pct"] == round(100 * sum(leaves) / (sum(leaves) + sum(nodes)), 2)
    assert r["target_to_nodes_pct"] == pytest.approx([100 * share] * 2, abs=0.0051)  # printed to 2 decimals


def test_tree_flag_defaults_are_the_papers_in_one_place():
    """Unset tree flags (a hand-built Namespace, a checkpoint saved before a flag existed) get the paper's
    settings (|E| = 100, path index, mean over the path incl. the leaf, one leaf-weight vector), and set flags
    are kept."""
    from argparse import Namespace

    from fairseq_tree.models.tree2seq_transformer import (
        TREE_FLAGS,
        Tree2SeqConfig,
        _tree_attention_kwargs,
        tree_config,
        tree_defaults,
    )

    assert TREE_FLAGS == ("no_hierarchical_embeddings", "no_subtree_mask", "hier_embed_size", "tree_vertical_index",
                          "tree_mean_without_leaf", "tree_leaf_weights", "tree_kernels", "tree_compile",
                          "tree_compile_multiple", "tree_compile_scope", "tree_compile_backend")
    assert _tree_attention_kwargs(tree_config(Namespace())) == dict(
        hier_embed=True, max_horizontal=100, max_vertical=100, vertical_index="path", count_leaf_in_mean=True,
        leaf_weights="vector", kernels="eager")
    args = Namespace(hier_embed_size=None, tree_leaf_weights="per-head", no_subtree_mask=True)
    tree_defaults(args)
    assert (args.hier_embed_size, args.tree_leaf_weights, args.no_subtree_mask, args.tree_vertical_index,
            args.no_hierarchical_embeddings, args.tree_mean_without_leaf) == (100, "per-head", True, "path", False,
                                                                              False)
    assert (args.tree_compile, args.tree_compile_multiple, args.tree_compile_scope, args.tree_compile_backend) == (
        False, 8, "stack", "inductor")
    assert args.tree_kernels == "eager"  # the eager ops stay the default until the GPU rows decide (issue 51)
    cfg = tree_config(Namespace(hier_embed_size=7, tree_vertical_index="depth", encoder_embed_dim=32))
    assert isinstance(cfg, Tree2SeqConfig) and cfg.encoder.embed_dim == 32  # fairseq's nesting of encoder_* flags
    assert _tree_attention_kwargs(cfg)["max_vertical"] == 7 and cfg.tree_mean_without_leaf is False


def test_side_channels_refuse_a_missing_or_stale_tree(data_bin):
    """fairseq_tree/side_channels.py: a decoder cross-attention raises before extract_features set a tree, and
    when its key does not have the held tree's sizes (a stale tree); fairseq-interactive's tree side is restored
    into a bare sample only when its src_tokens are the last collated batch's."""
    from fairseq_tree.side_channels import InteractiveTrees

    task, model = build(data_bin)
    model.eval()
    ds = task.datasets["train"]
    batch = ds.collater([ds[i] for i in range(4)])
    with torch.no_grad():
        enc = model.encoder(**encoder_input(batch))
        x = torch.zeros(1, 4, model.decoder.embed_dim)
        with pytest.raises(RuntimeError, match="before Tree2SeqDecoder.extract_features set a tree"):
            model.decoder.layers[0].encoder_attn(x, enc["encoder_out"][0], enc["encoder_out"][0])
        model.decoder(batch["net_input"]["prev_output_tokens"], encoder_out=enc)
        key = enc["encoder_out"][0]
        assert model.decoder.tree_context.tree_for(key) is enc["tree"][0]  # kept for checkpointed backward
        with pytest.raises(RuntimeError, match="a stale tree"):
            model.decoder.tree_context.tree_for(key[:, :2])

    channel = InteractiveTrees()
    channel.add(torch.tensor([4]), torch.tensor([0, 2]))
    with pytest.raises(RuntimeError, match="2 inputs but 1 trees"):
        channel.take(2)
    assert [t.tolist() for t in channel.take(1)[1]] == [[0, 2]]
    channel.collated(batch)
    bare = {"src_tokens": batch["net_input"]["src_tokens"].clone(), "src_lengths": batch["net_input"]["src_lengths"]}
    channel.restore(bare)
    assert torch.equal(bare["src_spans"], batch["net_input"]["src_spans"])
    other = {"src_tokens": batch["net_input"]["src_tokens"].flip(0)}
    with pytest.raises(RuntimeError, match="not the last batch collated"):
        channel.restore(other)


def test_build_model_is_fairseqs_with_its_checks(data_bin):
    """Tree2SeqModel.build_model runs fairseq's TransformerModelBase.build_model (its embedding checks included:
    the old copy had dropped the --decoder-embed-path one) and leaves no label dictionary on the config."""
    with pytest.raises(ValueError, match="not compatible with --decoder-embed-path"):
        build(data_bin, "--decoder-embed-path", "/nonexistent.vec")
    task, model = build(data_bin)
    assert not hasattr(model.args, "label_dictionary")
    assert model.encoder.embed_tokens is model.decoder.embed_tokens  # --share-all-embeddings
    assert model.encoder.embed_labels.num_embeddings == len(task.label_dictionary)


def test_checkpoint_activations_same_loss_and_gradients(data_bin):
    """--checkpoint-activations wraps the tree encoder layers (and fairseq's decoder layers): same weights,
    same loss and the same gradients as without it (dropout 0)."""
    grads, losses = [], []
    for extra in ([], ["--checkpoint-activations"]):
        task, model = build(data_bin, *extra)
        assert hasattr(model.encoder.layers[0], "precheckpoint_forward") == bool(extra)
        ds = task.datasets["train"]
        batch = ds.collater([ds[i] for i in range(6)])
        out, _ = model(**batch["net_input"])
        loss = torch.nn.functional.cross_entropy(out.transpose(1, 2), batch["target"],
                                                 ignore_index=task.target_dictionary.pad())
        loss.backward()
        losses.append(loss.detach())
        grads.append({k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None})
    torch.testing.assert_close(losses[0], losses[1])
    assert grads[0].keys() == grads[1].keys() and any("accumulation" in k for k in grads[0])
    for k in grads[0]:
        torch.testing.assert_close(grads[0][k], grads[1][k], atol=1e-6, rtol=1e-5)


def test_tree2seq_table_pairs_seeds_against_the_transformer(tmp_path):
    """fairseq-tree-report tree2seq: BLEU per seed, mean ± sample sd, and the per-seed difference to the
    transformer of the same seed (hand-computed: 34.0 - 33.0 = +1.0, 35.0 - 35.0 = 0.0 -> +0.50 ± 0.71), its
    updates / minutes / device from the fairseq-train log (a resumed run's last count; its segments' minutes
    summed), F1 / UF1 from quality/SRC/scores.jsonl, the paired bootstrap p of each seed as sacreBLEU's CLI gives it."""
    runs = {"transformer": (33.0, 35.0), "tree2seq_lal": (34.0, 35.0)}
    refs = (SHARED / "data" / "multi30k" / "test.de").read_text(encoding="utf-8").splitlines()[:40]
    order = [(7 * i) % 40 for i in range(40)]  # fairseq-generate prints sentences out of order
    for k, (name, scores) in enumerate(runs.items()):
        for seed, b in zip((1, 2), scores):
            d = tmp_path / "ckpt" / "de" / f"{name}_s{seed}"
            d.mkdir(parents=True)
            # hypotheses: the reference without one word, a different word per system and seed
            hyps = [" ".join(w for j, w in enumerate(r.split()) if j != (i + 2 * k + seed) % 5)
                    for i, r in enumerate(refs)]
            lines = [f"T-{i}\t{refs[i]}\nH-{i}\t-0.5\t{hyps[i]} .\nD-{i}\t-0.5\t{hyps[i]}\n" for i in order]
            (d / "test.gen").write_text("".join(lines) + f"Generate test with beam=5: BLEU = {b:.2f} 66/41/27/18\n",
                                        encoding="utf-8")
            (d / "hyps.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
            # fairseq-train's epoch summaries (train: bsz 200, then 230 -> 215 a update) and validations (the
            # last loss is reported); the train_inner line's bsz is not an epoch's
            (d / "train.log").write_text(
                "Namespace(..., 'cpu': True, ...)\n"
                "| INFO | train_inner | epoch 001:  5 / 9 loss=9.1, bsz=999.0, num_updates=500, wall=700\n"
                "| INFO | train | epoch 001 | loss 9.0 | bsz 200 | num_updates 1000 | train_wall 50 | wall 1500\n"
                f"| INFO | valid | epoch 001 | valid on 'valid' subset | loss 5.{seed}23 | num_updates 1000\n"
                "| INFO | train | epoch 002 | loss 8.0 | bsz 230 | num_updates 1500 | train_wall 90 | wall 3000\n"
                f"| INFO | valid | epoch 002 | valid on 'valid' subset | loss 4.{k}{seed}1 | num_updates 1500\n"
                "done training in 3001.0 seconds\n")
    q = tmp_path / "quality" / "lal"
    q.mkdir(parents=True)
    q.joinpath("scores.jsonl").write_text('{"f1": 77.81, "uf1": 81.49}\n{"f1": 80.81, "uf1": 83.02}\n')
    out = subprocess.run([BIN / "fairseq-tree-report", "tree2seq", tmp_path, "--trees", "lal",
                          "--seeds", "1", "2"], capture_output=True, text=True, check=True).stdout
    rows = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[2:-1]] for r in out.splitlines()
            if r.startswith("| transformer") or r.startswith("| tree2seq")}
    # p per seed: sacreBLEU's own CLI (--paired-bs, its default seed) on the same outputs in sentence order
    (tmp_path / "refs.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    p = []
    for seed in (1, 2):
        cli = subprocess.run([Path(sys.executable).parent / "sacrebleu", tmp_path / "refs.txt", "-i",
                              tmp_path / "ckpt" / "de" / f"transformer_s{seed}" / "hyps.txt",
                              tmp_path / "ckpt" / "de" / f"tree2seq_lal_s{seed}" / "hyps.txt", "--paired-bs",
                              "-m", "bleu", "-f", "text"], capture_output=True, text=True, check=True).stdout
        p.append(f"{float(re.search(r'p = ([0-9.]+)', cli).group(1)):.3f}")
    assert p[0] != p[1]
    assert rows["transformer"] == ["—", "—", "1 / 2", "33.00 / 35.00", "34.00 ± 1.41", "—", "—",
                                   "4.011 / 4.021", "215", "1500 / 1500", "50.0", "cpu"]
    assert rows["tree2seq_lal"] == ["77.8 / 81.5", "80.8 / 83.0", "1 / 2", "34.00 / 35.00", "34.50 ± 0.71",
                                    "+0.50 ± 0.71", " / ".join(p), "4.111 / 4.121", "215", "1500 / 1500", "50.0",
                                    "cpu"]
    # --png: the same differences drawn against the trees' wsj22 UF1
    subprocess.run([BIN / "fairseq-tree-report", "tree2seq", tmp_path, "--trees", "lal", "--seeds",
                    "1", "2", "--png", tmp_path / "bleu_vs_uf1.png"], capture_output=True, check=True)
    assert (tmp_path / "bleu_vs_uf1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    no_base = subprocess.run([BIN / "fairseq-tree-report", "tree2seq", tmp_path, "--trees", "lal",
                              "--seeds", "1", "2", "--no-baseline"], capture_output=True, text=True, check=True).stdout
    assert "| transformer" not in no_base and "| 34.50 ± 0.71 | — |" in no_base
    proc = subprocess.run([BIN / "fairseq-tree-report", "tree2seq", tmp_path, "--trees", "lal",
                           "--seeds", "1", "2", "--no-baseline", "--png", tmp_path / "x.png"], capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "--png: no tree source has both paired seeds" in proc.stderr
    # a source run with seed 2 only: its row has that seed, paired with the transformer's seed 2 (35.5 - 35.0);
    # the absent seed is named on stderr; a run directory without a scored test.gen is an error
    d = tmp_path / "ckpt" / "de" / "tree2seq_trivial_s2"
    d.mkdir()
    (d / "test.gen").write_text((tmp_path / "ckpt" / "de" / "tree2seq_lal_s2" / "test.gen").read_text(
        encoding="utf-8").replace("BLEU = 35.00", "BLEU = 35.50"), encoding="utf-8")
    # killed at 1,000 updates (400 s), resumed from its checkpoint with the wall meter restarted: 400 + 200 s
    (d / "train.log").write_text("| num_updates 1000 | wall 400\nLoaded checkpoint checkpoint_last.pt\n"
                                 "| num_updates 1200, wall=100\n| num_updates 1500 | wall 200\n")
    proc = subprocess.run([BIN / "fairseq-tree-report", "tree2seq", tmp_path, "--trees", "lal",
                           "trivial", "--seeds", "1", "2"], capture_output=True, text=True, check=True)
    trivial = [r for r in proc.stdout.splitlines() if r.startswith("| tree2seq_trivial")][0]
    assert f"| 2 | 35.50 | 35.50 (one seed) | +0.50 (one seed) | {p[1]} | — | — | 1500 | 10.0 |" in trivial
    assert "ckpt/de/tree2seq_trivial: no run for seed(s) 1" in proc.stderr
    (d / "test.gen").write_text("Generate test with beam=5:\n", encoding="utf-8")
    proc = subprocess.run([BIN / "fairseq-tree-report", "tree2seq", tmp_path, "--trees", "trivial",
                           "--seeds", "1", "2"], capture_output=True, text=True)
    assert proc.returncode != 0 and "tree2seq_trivial_s2/test.gen: no 'BLEU = ' line" in proc.stderr
    (d / "test.gen").unlink()
    proc = subprocess.run([BIN / "fairseq-tree-report", "tree2seq", tmp_path, "--trees", "trivial",
                           "--seeds", "1", "2"], capture_output=True, text=True)
    assert proc.returncode != 0 and "tree2seq_trivial_s2/test.gen: missing" in proc.stderr


def _train_batches(task_name, data_bin, *extra, max_tokens=400, split="train"):
    """The sentence ids of each batch of epoch 1 of a split, as fairseq-train would draw them."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, [
        str(data_bin), "--user-dir", USER_DIR, "--task", task_name, "--arch", "transformer", "--cpu",
        "-s", "en", "-t", "xx", *extra])
    task = tasks.setup_task(args)
    task.load_dataset(split)
    itr = task.get_batch_iterator(task.dataset(split), max_tokens=max_tokens, max_positions=(1024, 1024),
                                  seed=3, epoch=1).next_epoch_itr(shuffle=True)
    return task.dataset(split), [batch["id"].tolist() for batch in itr]


@pytest.mark.parametrize("batch_by", ["positions", "leaves"])
def test_num_batch_buckets_is_refused_since_it_would_bucket_the_leaves_only(data_bin, batch_by):
    """fairseq's --num-batch-buckets pads and orders sentences by leaf buckets; the tree side is not bucketed."""
    with pytest.raises(ValueError, match="--num-batch-buckets"):
        _train_batches("tree_translation", data_bin, "--tree-batch-by", batch_by, "--num-batch-buckets", "4")


def test_tree_batch_by_leaves_draws_the_transformers_batches(data_bin):
    """--tree-batch-by leaves: --max-tokens counts max(leaves, target) per sentence, so tree2seq trains on the
    very batches (same sentences, same order) that fairseq's translation task draws from the same data-bin and
    seed; the default, positions, counts max(leaves + nodes, target): more, smaller batches, each within the
    budget by that count."""
    _, plain = _train_batches("translation", data_bin)
    ds, leaves = _train_batches("tree_translation", data_bin, "--tree-batch-by", "leaves")
    _, positions = _train_batches("tree_translation", data_bin)
    assert leaves == plain
    assert len(positions) > len(leaves)
    longest = lambda ids, src: max(max(src[i], ds.tgt_sizes[i]) for i in ids)  # noqa: E731
    assert all(len(b) * longest(b, ds.leaf_sizes + ds.node_sizes) <= 400 for b in positions)
    assert any(len(b) * longest(b, ds.leaf_sizes + ds.node_sizes) > 400 for b in leaves)
    # --max-positions counts leaves + nodes whatever the batching: with a bound between the longest leaf count
    # and the longest leaves + nodes, exactly the sentences over it by that count are left out
    bound = int(ds.leaf_sizes.max()) + 1
    over = sorted(int(i) for i in np.flatnonzero(ds.leaf_sizes + ds.node_sizes > bound))
    assert over
    for d in (ds, _train_batches("tree_translation", data_bin)[0]):
        kept, ignored = d.filter_indices_by_size(np.arange(len(d)), (bound, 1024))
        assert sorted(ignored) == over and len(kept) == len(d) - len(over)


def test_positions_matched_databin_appends_labels_and_batches_as_tree2seq(data_bin, tmp_path):
    """fairseq-tree-positions-matched: each source is its leaves then its node labels in post-order
    (hand-read from the PTB trees: "Volume totaled 11,390,000 shares ." has the split words' NN and CD nodes,
    then NP, VP, S; a one-word sentence split by BPE has its NNS node only), the target untouched;
    positions_matched_translation draws fairseq's translation batches by default (the leaves) and tree2seq's
    positions batches with --pm-batch-by positions, and --max-positions counts all n + m tokens."""
    from fairseq.data import Dictionary, indexed_dataset

    pm = tmp_path / "pm"
    run = subprocess.run([BIN / "fairseq-tree-positions-matched", data_bin, pm],
                         capture_output=True, text=True, check=True)
    assert "train: 64 sentences" in run.stderr and not (tmp_path / "pm.tmp").exists()
    vocab, words = Dictionary.load(str(pm / "dict.en.txt")), Dictionary.load(str(data_bin / "dict.en.txt"))
    assert vocab.symbols[: len(words)] == words.symbols and (pm / "dict.xx.txt").read_bytes() == (
        pm / "dict.en.txt").read_bytes()
    src = indexed_dataset.make_dataset(str(pm / "train.en-xx.en"), impl="mmap")
    assert vocab.string(src[50]) == ("V@@ ol@@ ume totaled 1@@ 1@@ ,@@ 3@@ 9@@ 0@@ ,@@ 0@@ 00 shares . "
                                     "<NN> <CD> <NP> <VP> <S>")
    assert vocab.string(src[5]) == "Y@@ ie@@ l@@ d@@ s <NNS>"
    assert np.load(pm / "train.en-xx.en.leaves.npy")[[5, 50]].tolist() == [5, 15]
    for ext in ("bin", "idx"):
        assert (pm / f"train.en-xx.xx.{ext}").read_bytes() == (data_bin / f"train.en-xx.xx.{ext}").read_bytes()
    _, plain = _train_batches("translation", data_bin)
    ds, leaves = _train_batches("positions_matched_translation", pm)
    tree_ds, positions = _train_batches("tree_translation", data_bin)
    # the same sentences in the same batches (collate orders a batch by its tokens, here n + m)
    as_sets = lambda batches: [sorted(b) for b in batches]  # noqa: E731
    assert as_sets(leaves) == as_sets(plain)
    assert as_sets(_train_batches("positions_matched_translation", pm, "--pm-batch-by", "positions")[1]) == \
        as_sets(positions)
    assert ds.position_sizes.tolist() == (tree_ds.leaf_sizes + tree_ds.node_sizes).tolist()
    bound = int(tree_ds.leaf_sizes.max()) + 1
    kept, ignored = ds.filter_indices_by_size(np.arange(len(ds)), (bound, 1024))
    assert sorted(ignored) == sorted(int(i) for i in np.flatnonzero(ds.position_sizes > bound)) != []
    # fairseq's own CLIs train and decode a transformer on it
    ckpt = tmp_path / "ckpt"
    _sh(BIN / "fairseq-train", pm, "--task", "positions_matched_translation", "--user-dir", USER_DIR, "--arch",
        "transformer", "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "32",
        "--decoder-embed-dim", "32", "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
        "--share-all-embeddings", "--optimizer", "adam", "--lr", "1e-3", "--max-tokens", "2000", "--max-update",
        "3", "--cpu", "--num-workers", "0", "--no-epoch-checkpoints", "--save-dir", ckpt, "--log-format", "simple")
    gen = _sh(BIN / "fairseq-generate", pm, "--task", "positions_matched_translation", "--user-dir", USER_DIR,
              "--path", ckpt / "checkpoint_last.pt", "--gen-subset", "valid", "--beam", "2", "--max-len-b", "5",
              "--batch-size", "64", "--cpu")
    assert len(re.findall(r"^H-\d+", gen, flags=re.M)) == 64
    (pm / "valid.en-xx.en.leaves.npy").unlink()
    with pytest.raises(FileNotFoundError, match="valid.en-xx.en.leaves.npy: missing"):
        _train_batches("positions_matched_translation", pm, split="valid")
