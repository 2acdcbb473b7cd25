"""The ``tree_induction`` task end to end: masking policy (hand-checkable properties, determinism), then real
CLIs on real data: induction text -> fairseq-preprocess --only-source -> fairseq-train (tiny models, validation
on a treebank logging uf1/uas) -> fairseq-tree-induce (trees, CoNLL-U, scores, plots), with the validation's
uf1 equal to the CLI's on the same checkpoint."""

import contextlib
import json
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import BIN, REPO, SHARED, assert_safe_checkpoint
from conftest import run_command as _run
from fairseq.data import Dictionary

from fairseq_tree.data.masked_sentence_dataset import MaskedSentenceDataset, MaskPolicy, mask_sentence

pytestmark = pytest.mark.slow(minutes=3)  # one xdist worker: 2 min (2026-11-25) + ~1 min (loss_plateau)

PTB = SHARED / "data" / "ptb_sample"

# ------------------------------------------------------------------------------------------ masking
def _dict(n_words=50):
    d = Dictionary()
    for i in range(n_words):
        d.add_symbol(f"w{i}")
    mask = d.add_symbol("<mask>")
    return d, mask


def _sentence(d, n, unk_at=()):
    body = [d.index(f"w{i % 50}") for i in range(n)]
    for k in unk_at:
        body[k] = d.unk()
    return np.array([d.bos()] + body + [d.eos()])


def test_mask_never_touches_specials_and_counts_follow_policy():
    d, mask = _dict()
    tokens = _sentence(d, 40, unk_at=(3, 7))
    rng = np.random.default_rng(0)
    chosen_total, kinds = 0, Counter()
    for _ in range(400):
        masked, target = mask_sentence(tokens, d, mask, MaskPolicy(0.15, 0.1, 0.1), rng)
        chosen = np.flatnonzero(target != d.pad())
        # never BOS (0), EOS (41), <unk> (4, 8): unchanged and not predicted
        assert not set(chosen) & {0, 41, 4, 8}
        assert masked[0] == d.bos() and masked[41] == d.eos() and masked[4] == masked[8] == d.unk()
        # floor(0.15 * 38 + u) with u in [0, 1): 5 or 6 of the 38 eligible words
        assert len(chosen) in (5, 6)
        assert (target[chosen] == tokens[chosen]).all()
        unchosen = np.setdiff1d(np.arange(len(tokens)), chosen)
        assert (masked[unchosen] == tokens[unchosen]).all()
        for p in chosen:
            kinds["mask" if masked[p] == mask else "same" if masked[p] == tokens[p] else "random"] += 1
            if masked[p] not in (mask, tokens[p]):
                assert d.nspecial <= masked[p] < len(d) and masked[p] != mask  # a word, never a special
        chosen_total += len(chosen)
    assert abs(chosen_total / 400 - 0.15 * 38) < 0.1  # E[num] = p * n
    frac = {k: v / chosen_total for k, v in kinds.items()}
    assert abs(frac["mask"] - 0.8) < 0.03 and abs(frac["same"] - 0.1) < 0.03 and abs(frac["random"] - 0.1) < 0.03


def test_structformer_policy_always_masks():
    d, mask = _dict()
    tokens = _sentence(d, 20)
    masked, target = mask_sentence(tokens, d, mask, MaskPolicy(0.3, 0.0, 0.0), np.random.default_rng(1))
    chosen = target != d.pad()
    assert chosen.sum() in (6, 7) and (masked[chosen] == mask).all()


def test_masks_are_deterministic_per_sentence_and_epoch():
    d, mask = _dict()
    sents = [torch.from_numpy(_sentence(d, n)[1:]) for n in (5, 12, 30)]  # w.. </s> as fairseq-preprocess
    ds = MaskedSentenceDataset(sents, d, mask, MaskPolicy(0.3, 0.1, 0.1), seed=3)
    a = [ds[i]["masked"] for i in range(3)]
    batch = ds.collater([ds[2], ds[0]])
    assert torch.equal(batch["net_input"]["src_tokens"][0], a[2])
    assert torch.equal(batch["net_input"]["src_tokens"][1, : len(a[0])], a[0])
    assert (batch["net_input"]["src_tokens"][1, len(a[0]):] == d.pad()).all()  # right padding
    assert batch["original_tokens"][0, 0] == d.bos() and batch["ntokens"] == int(batch["target"].ne(d.pad()).sum())
    ds.set_epoch(2)
    assert not torch.equal(ds[2]["masked"], a[2])  # a new epoch masks anew


def test_bernoulli_policy_chooses_each_word_alone_bos_and_unk_included():
    """The authors' Tree Transformer masking: each of BOS, the 38 words and the 2 <unk> (41 candidates; EOS never)
    chosen with p = 1/7 independently: the count varies beyond {5, 6} (binomial sd 2.2), none some of the time
    ((6/7)^41 = 0.2%: about 1 in 400), BOS and <unk> predicted at the words' rate."""
    d, mask = _dict()
    tokens = _sentence(d, 40, unk_at=(3, 7))
    rng = np.random.default_rng(0)
    policy = MaskPolicy(1 / 7, 0.1, 0.1, "bernoulli", True)
    policy.check()
    counts, per_pos = [], np.zeros(len(tokens))
    for _ in range(4000):
        masked, target = mask_sentence(tokens, d, mask, policy, rng)
        chosen = np.flatnonzero(target != d.pad())
        assert 41 not in chosen and masked[41] == d.eos()
        assert (target[chosen] == tokens[chosen]).all()
        counts.append(len(chosen))
        per_pos[chosen] += 1
    counts = np.array(counts)
    assert abs(counts.mean() - 41 / 7) < 0.1 and abs(counts.std() - (41 * 1 / 7 * 6 / 7) ** 0.5) < 0.15
    assert counts.min() <= 1 and counts.max() >= 12
    rate = per_pos / 4000
    for p in (0, 4, 8):  # BOS and the two <unk>
        assert abs(rate[p] - 1 / 7) < 0.02
    assert rate[41] == 0


def test_unsorted_batches_order_sentences_at_random_each_epoch():
    """--unsorted-batches: ordered_indices() is a permutation drawn from (seed, epoch) (the same again for the same
    epoch, another for the next; not the masks' stream); by default sentences go by length, ties by index."""
    d, mask = _dict()
    lengths = [5, 12, 3, 30, 12, 7, 9, 20] * 4
    sents = [torch.from_numpy(_sentence(d, n)[1:]) for n in lengths]
    ds = MaskedSentenceDataset(sents, d, mask, MaskPolicy(0.15, 0.1, 0.1), seed=3)
    order = ds.ordered_indices()
    assert [lengths[i] for i in order] == sorted(lengths) and list(order[:4]) == [2, 10, 18, 26]
    rnd = MaskedSentenceDataset(sents, d, mask, MaskPolicy(0.15, 0.1, 0.1), seed=3, unsorted=True)
    first = rnd.ordered_indices()
    assert sorted(first) == list(range(32)) and [lengths[i] for i in first] != sorted(lengths)
    assert np.array_equal(rnd.ordered_indices(), first)
    rnd.set_epoch(2)
    assert not np.array_equal(rnd.ordered_indices(), first)
    ds.set_epoch(2)
    assert all(torch.equal(rnd[i]["masked"], ds[i]["masked"]) for i in range(32))  # the masks are the same


def test_task_defaults_are_fairseqs_not_the_authors_code():
    """The authors' code's choices are opt-in (VARIANTS=code sets them): by default sentences of similar length are
    batched together, floor(p n + u) words are chosen, BOS and <unk> are never chosen, and an epoch's data workers
    end with it (the masks change each epoch)."""
    from fairseq_tree.tasks.tree_induction import TreeInductionConfig
    cfg = TreeInductionConfig()
    assert (cfg.unsorted_batches, cfg.mask_sampling, cfg.mask_bos_unk, cfg.persistent_workers) == (
        False, "count", False, False)


def test_policy_checks_its_values():
    with pytest.raises(ValueError, match="leave-unmasked"):
        MaskPolicy(0.15, 0.6, 0.5).check()
    with pytest.raises(ValueError, match="mask-sampling"):
        MaskPolicy(0.15, 0.1, 0.1, "poisson").check()
    # each bound alone: one negative share with a sum under 1, a rate outside [0, 1]
    for leave, rand in ((-0.1, 0.2), (0.2, -0.1)):
        with pytest.raises(ValueError, match="leave-unmasked"):
            MaskPolicy(0.15, leave, rand).check()
    for prob in (-0.01, 1.01):
        with pytest.raises(ValueError, match="mask-prob"):
            MaskPolicy(prob, 0.1, 0.1).check()
    for ok in (MaskPolicy(0.0, 0.0, 0.0), MaskPolicy(1.0, 0.5, 0.5), MaskPolicy(1 / 7, 0.1, 0.1, "bernoulli")):
        ok.check()  # the edges of the ranges are allowed


# ---------------------------------------------------------------------------- CLIs end to end
@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Induction text from the PTB sample's training words (3,396 sentences), binarized; a 60-sentence gold
    slice of ptb_sample/valid with its dependencies for validation and scoring."""
    if not (PTB / "train.mrg").is_file():
        pytest.skip(f"{PTB} not found")
    d = tmp_path_factory.mktemp("induction")
    _run(BIN / "python", "-m", "fairseq_tree.data.induction_text", "--out", d / "train.txt", "--treebank",
         PTB / "train.mrg")
    _run(BIN / "fairseq-preprocess", "--only-source", "--trainpref", d / "train.txt", "--validpref", d / "train.txt",
         "--destdir", d / "bin", "--nwordssrc", "2000")
    mrg = (PTB / "valid.mrg").read_text(encoding="utf-8").splitlines()[:60]
    blocks = [b for b in (PTB / "valid.conllu").read_text(encoding="utf-8").split("\n\n") if b.strip()][:60]
    (d / "gold.mrg").write_text("\n".join(mrg) + "\n", encoding="utf-8")
    (d / "gold.conllu").write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return d


def _train(corpus, arch, save, updates=40, *extra):
    proc = _run(BIN / "fairseq-train", corpus / "bin", "--user-dir", REPO / "fairseq_tree", "--task", "tree_induction",
                "--arch", arch, "--criterion", "masked_lm", "--optimizer", "adam", "--lr", "1e-3",
                "--max-tokens", "1500",
                "--max-update", str(updates), "--cpu", "--seed", "1", "--save-dir", save, "--no-epoch-checkpoints",
                "--eval-treebank", corpus / "gold.mrg", "--eval-deps", corpus / "gold.conllu",
                "--validate-interval-updates", str(updates), "--best-checkpoint-metric", "uf1",
                "--maximize-best-checkpoint-metric", "--log-format", "simple", *extra)
    return proc.stdout + proc.stderr


def _max_children(cmd, log) -> int:
    """Run ``cmd`` (output to ``log``); the most child processes it had at once (polled every 0.2 s, /proc)."""
    with open(log, "w") as out:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT)
        path, most = Path(f"/proc/{proc.pid}/task/{proc.pid}/children"), 0
        while proc.poll() is None:
            with contextlib.suppress(OSError):
                most = max(most, len(path.read_text().split()))
            time.sleep(0.2)
    assert proc.returncode == 0, Path(log).read_text()[-3000:]
    return most


# fairseq 0.12.2's EpochBatchIterator on the installed fairseq: v0.12.2 fairseq/data/iterators.py builds each
# epoch's DataLoader with "persistent_workers=self.num_workers > 0", whatever the task's config says
AS_0122 = """import fairseq.data.iterators as it
init = it.EpochBatchIterator.__init__
def persistent(self, *args, **kwargs):
    init(self, *args, **dict(kwargs, persistent_workers=True))
it.EpochBatchIterator.__init__ = persistent
from fairseq_cli.train import cli_main
cli_main()
"""


@pytest.mark.parametrize("persistent", [False, True])
def test_an_epochs_data_worker_ends_with_it(corpus, tmp_path, persistent):
    """Masks change each epoch, so fairseq builds a new batch iterator every epoch; each iterator lives in a
    reference cycle, and with persistent workers (fairseq 0.12.2 always) each epoch's worker process stayed alive
    (5 epochs: 5 processes, each a copy of the data: two WSJ trainings of 1,000 updates filled 24 GB). The task
    ends them at the next epoch's start, on 0.12.2 too (its iterators, reproduced); --persistent-workers keeps
    fairseq's behaviour."""
    cmd = [BIN / "python", "-c", AS_0122] if not persistent else [BIN / "fairseq-train"]
    most = _max_children(cmd + [corpus / "bin", "--user-dir", REPO / "fairseq_tree", "--task", "tree_induction",
                                "--arch", "constituent_transformer_tiny", "--criterion", "masked_lm", "--optimizer",
                                "adam", "--lr", "1e-3", "--batch-size", "64", "--max-tokens", "8192", "--max-epoch",
                                "5", "--cpu", "--no-save", "--disable-validation", "--num-workers", "1",
                                "--save-dir", tmp_path] + (["--persistent-workers"] if persistent else []),
                         tmp_path / "train.log")
    assert (most >= 4) if persistent else (most == 1), most


def _valid_line(log, updates):
    lines = [l for l in log.splitlines() if "valid on 'valid' subset" in l and f"num_updates {updates}" in l]
    assert lines, log[-3000:]
    return lines[-1]


@pytest.fixture(scope="module")
def constituent_run(corpus, tmp_path_factory):
    save = tmp_path_factory.mktemp("ct") / "ck"
    log = _train(corpus, "constituent_transformer_tiny", save)
    assert_safe_checkpoint(save / "checkpoint_last.pt")
    return save / "checkpoint_last.pt", log


def test_constituent_transformer_train_validate_induce(corpus, constituent_run, tmp_path):
    ckpt, log = constituent_run
    policy = "MaskPolicy(prob=0.15, leave_unmasked=0.1, random_token=0.1, sampling='count', bos_unk=False)"
    assert f"masking for constituent_transformer_tiny: {policy}" in log
    assert "gold.mrg: 60 sentences" in log
    line = _valid_line(log, 40)
    uf1 = float(re.search(r"\| uf1 ([0-9.]+)", line).group(1))
    assert "uas" not in line  # constituent attention induces no dependencies
    out = tmp_path / "out"
    proc = _run(BIN / "fairseq-tree-induce", "--path", ckpt, "--treebank",
                corpus / "gold.mrg", "--deps", corpus / "gold.conllu", "--out", out, "--plot", "1",
                "--dump-attention", out / "attention.jsonl")
    scores = json.loads((out / "scores.json").read_text())
    # the validation in the training loop and the CLI score the same checkpoint the same way
    assert scores["model"]["sentence_f1"] == pytest.approx(uf1, abs=0.006)
    assert scores["sentences"] == 60 and scores["baselines"]["right"]["sentences"] == scores["model"]["sentences"]
    trees = (out / "trees.txt").read_text(encoding="utf-8").splitlines()
    assert len(trees) == 60 and trees[0].startswith("(X (X ")  # X nodes and preterminals: --parser given reads it
    assert not (out / "deps.conllu").exists()
    pngs = sorted(p.name for p in (out / "plots").iterdir())
    assert pngs == ["sent1_prior.png", "sent1_tree.png"]
    assert all((out / "plots" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert "right" in proc.stdout and "masked-word perplexity" in proc.stdout
    from fairseq_tree.evaluation.unsupervised import read_gold

    # --dump-attention: the plotted sentence's constituent prior per layer, n x n in [0, 1], and its induced tree
    (item,) = [json.loads(line) for line in (out / "attention.jsonl").read_text(encoding="utf-8").splitlines()]
    first = read_gold(str(corpus / "gold.mrg"))[0]
    assert item["words"] == first.raw_words and item["tree"] == trees[0] and scores["attention"].endswith(".jsonl")
    n = len(first.raw_words)
    priors = {k: m for k, m in item["maps"].items() if k.startswith("prior_layer")}
    assert sorted(item["maps"]) == ["links"] + [f"prior_layer{k}" for k in range(len(priors))] and priors
    assert all(len(m) == n and all(len(r) == n and all(0 <= v <= 1 for v in r) for r in m) for m in priors.values())
    links = item["maps"]["links"]  # a per layer between neighbouring words: [layers, n - 1], labelled
    assert links["rows"] == [str(k) for k in range(len(priors))] and len(links["cols"]) == n - 1
    assert links["cols"][0] == f"{first.raw_words[0]}|{first.raw_words[1]}"
    from fairseq_tree.view.records import attention_records

    (rec,), _ = attention_records(str(out / "attention.jsonl"))
    assert [a["title"] for a in rec["att"]] == list(item["maps"]) and rec["trees"][0]["n"][-1][:2] == [0, n]

    assert scores["perplexity"]["words"] == sum(len(g) for g in read_gold(str(corpus / "gold.mrg")))  # each word once
    # the hub interface induces the CLI's trees from the same (unnormalised) words
    from fairseq_tree.models.constituent_transformer import ConstituentTransformerModel

    hub = ConstituentTransformerModel.from_pretrained(str(ckpt.parent), ckpt.name)
    gold = read_gold(str(corpus / "gold.mrg"))
    induced = hub.induce([g.raw_words for g in gold])
    assert [x.tree for x in induced] == trees and all(x.heads is None for x in induced)
    # hub.attention gives the CLI's dump; hub.view draws it (the page's first sentence: the tree and its maps)
    assert hub.attention([first.raw_words])[0] == item
    view = hub.view([g.raw_words for g in gold[:3]])
    assert [s["trees"][0]["n"] for s in view.data["sentences"]][0] == rec["trees"][0]["n"]
    assert view.data["sentences"][0]["att"] == rec["att"] and "<svg" not in view.html  # drawn by the page's script


def test_structformer_train_validate_induce(corpus, tmp_path):
    log = _train(corpus, "structformer_tiny", tmp_path / "ck")
    assert_safe_checkpoint(tmp_path / "ck" / "checkpoint_last.pt")
    policy = "MaskPolicy(prob=0.3, leave_unmasked=0.0, random_token=0.0, sampling='count', bos_unk=False)"
    assert f"masking for structformer_tiny: {policy}" in log
    line = _valid_line(log, 40)
    uf1 = float(re.search(r"\| uf1 ([0-9.]+)", line).group(1))
    uas = float(re.search(r"\| uas ([0-9.]+)", line).group(1))
    out = tmp_path / "out"
    _run(BIN / "fairseq-tree-induce", "--path", tmp_path / "ck" / "checkpoint_last.pt", "--treebank",
         corpus / "gold.mrg", "--deps", corpus / "gold.conllu", "--out", out, "--plot", "1", "--no-perplexity")
    scores = json.loads((out / "scores.json").read_text())
    # batches differ (validation: by token count; CLI: 64 sorted sentences), so float sums differ in the last
    # bits and an untrained model's near-tied distances may split differently in at most a sentence or two
    assert scores["model"]["sentence_f1"] == pytest.approx(uf1, abs=2.0)
    assert scores["model"]["attachment"]["uas"] == pytest.approx(uas, abs=1.0)
    blocks = (out / "deps.conllu").read_text(encoding="utf-8").strip().split("\n\n")
    assert len(blocks) == 60  # every gold sentence has >= 1 word
    assert sorted(p.name for p in (out / "plots").iterdir()) == ["sent1_dependency.png", "sent1_tree.png"]
    # Algorithm 3 (joint) gives a dependency tree for every sentence (eq. 17 argmaxes need not)
    from fairseq_tree.trees import read_conllu

    _run(BIN / "fairseq-tree-induce", "--path", tmp_path / "ck" / "checkpoint_last.pt", "--treebank",
         corpus / "gold.mrg", "--deps", corpus / "gold.conllu", "--out", tmp_path / "joint", "--opt", "method=joint",
         "--no-perplexity")
    assert len(list(read_conllu(str(tmp_path / "joint" / "deps.conllu")))) == 60
    assert json.loads((tmp_path / "joint" / "scores.json").read_text())["heads_not_tree"] == 0


def test_preprocess_parse_failure_names_the_failing_line(constituent_run, tmp_path):
    """A sentence the parser cannot parse (260 words > the tiny model's 254) is skipped as parse_failed at ITS line
    (line 4, the second line of the second shard), the other lines are parsed."""
    ckpt, _ = constituent_run
    lines = ["the cat sat .", "a dog ran .", "it rained .", " ".join(["word"] * 260), "we left ."]
    (tmp_path / "train.en").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _run(BIN / "fairseq-tree-preprocess", "-s", "en", "--only-source", "--trainpref", tmp_path / "train",
         "--parser", "induced", "--parser-model", ckpt, "--destdir", tmp_path / "bin", "--workers", "1",
         "--shard-size", "2", "--on-error", "skip")
    report = json.loads((tmp_path / "bin" / "preprocess.json").read_text())["splits"]["train"]
    assert report["lines"] == 5 and report["sentences"] == 4 and report["skipped_by_reason"] == {"parse_failed": 1}
    (entry,) = report["skipped_lines"]
    assert entry["file"].endswith("train.en") and entry["line"] == 4 and entry["reason"] == "parse_failed"
    assert "260 words" in entry["message"]
    trees = (tmp_path / "bin" / "train.en.trees").read_text(encoding="utf-8").split("\n")[:5]
    assert [t.count("(X") > 0 for t in trees] == [True, True, True, False, True] and trees[3] == ""


def test_adam_l2_trains_saves_and_resumes(corpus, tmp_path):
    """--optimizer adam_l2 through fairseq-train: torch's Adam with its settings in the checkpoint, and a resume
    goes on from its saved state (the step count)."""
    from fairseq_tree.safe_loading import load

    def train(updates):
        return _run(BIN / "fairseq-train", corpus / "bin", "--user-dir", REPO / "fairseq_tree", "--task",
                    "tree_induction", "--arch", "mlm_transformer_tiny", "--criterion", "masked_lm", "--optimizer",
                    "adam_l2", "--adam-betas", "(0.9,0.98)", "--adam-eps", "1e-9", "--weight-decay", "1.2e-6",
                    "--lr", "1e-3", "--max-tokens", "1000", "--max-update", str(updates), "--cpu",
                    "--save-dir", tmp_path / "ck", "--no-epoch-checkpoints", "--log-format", "simple")

    train(2)
    state = assert_safe_checkpoint(tmp_path / "ck" / "checkpoint_last.pt")
    assert state["cfg"]["optimizer"]["_name"] == "adam_l2"
    group = state["last_optimizer_state"]["param_groups"][0]
    assert (group["betas"], group["eps"], group["weight_decay"]) == ((0.9, 0.98), 1e-9, 1.2e-6)
    assert float(next(iter(state["last_optimizer_state"]["state"].values()))["step"]) == 2
    train(3)
    state = load(tmp_path / "ck" / "checkpoint_last.pt")
    assert float(next(iter(state["last_optimizer_state"]["state"].values()))["step"]) == 3  # resumed, not afresh


def test_loss_plateau_halves_on_the_loss_and_resumes_exactly(corpus, tmp_path):
    """--lr-scheduler loss_plateau through fairseq-train, selecting on UF1: each epoch's rate follows the rule
    (patience 1: halved after two epochs in a row without a validation loss under the best so far) applied by
    hand to the logged losses, and a run stopped after epoch 5, with one such epoch counted, then resumed, logs
    the uninterrupted run's losses and rates (fairseq's own reduce_lr_on_plateau would step on the UF1 and
    forget the count)."""
    lines = (corpus / "train.txt").read_text(encoding="utf-8").splitlines()
    (tmp_path / "train.txt").write_text("\n".join(lines[:300]) + "\n", encoding="utf-8")
    (tmp_path / "valid.txt").write_text("\n".join(lines[300:400]) + "\n", encoding="utf-8")
    _run(BIN / "fairseq-preprocess", "--only-source", "--trainpref", tmp_path / "train.txt", "--validpref",
         tmp_path / "valid.txt", "--destdir", tmp_path / "bin", "--nwordssrc", "1000")

    def train(save, epochs):
        out = _run(BIN / "fairseq-train", tmp_path / "bin", "--user-dir", REPO / "fairseq_tree", "--task",
                   "tree_induction", "--arch", "structformer_tiny", "--criterion", "masked_lm", "--optimizer",
                   "adam", "--lr", "0.01", "--lr-scheduler", "loss_plateau", "--lr-patience", "1",
                   "--validate-interval", "1", "--max-tokens", "2000", "--max-epoch", str(epochs), "--cpu",
                   "--seed", "1", "--save-dir", save, "--no-epoch-checkpoints", "--log-format", "simple",
                   "--eval-treebank", corpus / "gold.mrg", "--best-checkpoint-metric", "uf1",
                   "--maximize-best-checkpoint-metric")
        log = out.stdout + out.stderr
        losses = [float(x) for x in re.findall(r"valid on 'valid' subset \| loss ([\d.]+)", log)]
        rates = [float(x) for x in re.findall(r"\| train \|.*? lr ([\d.e-]+)", log)]
        return losses, rates

    losses, rates = train(tmp_path / "a", 8)
    expected, best, bad, counts = [0.01], float("inf"), 0, []
    for loss in losses[:-1]:
        best, bad = (loss, 0) if loss < best else (best, bad + 1)
        if bad == 2:
            expected, bad = expected + [expected[-1] / 2], 0
        else:
            expected.append(expected[-1])
        counts.append(bad)
    assert len(losses) == len(rates) == 8
    assert rates == pytest.approx(expected) and min(rates) < 0.01  # it did halve
    assert counts[4] == 1  # after epoch 5 one epoch without a lower loss is counted: the resume must keep it
    first, first_rates = train(tmp_path / "b", 5)
    rest, rest_rates = train(tmp_path / "b", 8)
    assert first + rest == pytest.approx(losses, abs=1e-6) and first_rates + rest_rates == pytest.approx(rates)
    state = assert_safe_checkpoint(tmp_path / "b" / "checkpoint_last.pt")
    assert state["optimizer_history"][-1]["lr_scheduler_state"]["_last_lr"] == [pytest.approx(rates[-1])]


def test_init_checkpoint_is_the_runs_start_and_crosses_init_with_draws(corpus, tmp_path):
    """scripts/diagnostics/init_checkpoint.py: seed S's initial weights, through --finetune-from-model, give seed
    S's run update for update (losses at every update, final weights); another seed's init on the same draws
    changes the losses, and the same init on another seed's draws changes them too (batches, masks, dropout)."""
    from fairseq_tree.safe_loading import load

    flags = [corpus / "bin", "--user-dir", REPO / "fairseq_tree", "--task", "tree_induction", "--arch",
             "structformer_tiny", "--criterion", "masked_lm", "--optimizer", "adam", "--lr", "1e-3",
             "--max-tokens", "600", "--cpu", "--no-epoch-checkpoints", "--log-format", "simple",
             "--log-interval", "1", "--dropout", "0.3"]

    def init(seed, from_file=False):  # from the flags after --, or from a flags file (no --user-dir) and --seed
        out = tmp_path / f"init_s{seed}{'_file' if from_file else ''}.pt"
        script = REPO / "scripts" / "diagnostics" / "init_checkpoint.py"
        if not from_file:
            _run(BIN / "python", script, "--out", out, "--", *flags, "--seed", str(seed))
        else:
            (tmp_path / "flags.txt").write_text(" ".join(map(str, flags[:1] + flags[3:])) + " --seed 1\n")
            _run(BIN / "python", script, "--out", out, "--flags", tmp_path / "flags.txt", "--seed", str(seed))
        return out

    def train(name, seed, *extra):
        proc = _run(BIN / "fairseq-train", *flags, "--seed", str(seed), "--max-update", "4", "--save-dir",
                    tmp_path / name, *extra)
        losses = re.findall(r"train_inner \| .*?loss=([0-9.]+)", proc.stdout + proc.stderr)
        assert len(losses) == 4
        return losses, load(tmp_path / name / "checkpoint_last.pt")["model"]

    init3 = init(3)
    from_file = load(init(3, from_file=True))["model"]  # the file says --seed 1; --seed 3 wins
    assert all(torch.equal(v, from_file[k]) for k, v in load(init3)["model"].items())
    plain, weights = train("plain", 3)
    same, same_weights = train("same", 3, "--finetune-from-model", init3)
    assert same == plain
    assert all(torch.equal(weights[k], same_weights[k]) for k in weights)
    other_init, _ = train("init5", 3, "--finetune-from-model", init(5))
    assert other_init[0] != plain[0]  # another start on the same first batch and masks
    other_draws, _ = train("draws1", 1, "--finetune-from-model", init3)
    assert other_draws[0] != plain[0]  # seed 3's start on seed 1's batches and masks


def test_reads_fairseq_tree_preprocess_only_source(tmp_path):
    """A fairseq-tree-preprocess --only-source directory (leaves without EOS, dict.SRC.txt) is read too."""
    if not (PTB / "train.mrg").is_file():
        pytest.skip(f"{PTB} not found")
    trees = (PTB / "train.mrg").read_text(encoding="utf-8").splitlines()
    (tmp_path / "train.en").write_text("\n".join(trees[:80]) + "\n", encoding="utf-8")
    (tmp_path / "valid.en").write_text("\n".join(trees[80:100]) + "\n", encoding="utf-8")
    _run(BIN / "fairseq-tree-preprocess", "-s", "en", "--only-source", "--trainpref", tmp_path / "train",
         "--validpref", tmp_path / "valid", "--parser", "given", "--destdir", tmp_path / "bin")
    from fairseq_tree.tasks.tree_induction import TreeInductionConfig, TreeInductionTask
    from fairseq_tree.trees import tree_from_brackets

    task = TreeInductionTask.setup_task(TreeInductionConfig(data=str(tmp_path / "bin"), seed=1))
    task.load_dataset("valid")
    task.policy.prob, task.policy.leave_unmasked, task.policy.random_token = 0.15, 0.1, 0.1
    ds, d = task.datasets["valid"], task.source_dictionary
    assert len(ds) == 20
    words = tree_from_brackets(trees[80]).words
    assert ds[0]["source"].tolist() == [d.bos()] + [d.index(w) for w in words] + [d.eos()]
    _run(BIN / "fairseq-train", tmp_path / "bin", "--user-dir", REPO / "fairseq_tree", "--task", "tree_induction",
         "--arch", "mlm_transformer_tiny", "--criterion", "masked_lm", "--optimizer", "adam", "--lr", "1e-3",
         "--max-tokens", "1000", "--max-update", "3", "--cpu", "--save-dir", tmp_path / "ck", "--no-save")


def test_preprocess_parser_induced(corpus, constituent_run, tmp_path):
    """fairseq-tree-preprocess --parser induced: raw text -> tokens -> trees of the checkpoint over the word
    tokens (normalised as in training), punctuation under the lowest constituent holding both neighbours."""
    ckpt, _ = constituent_run
    raw = (PTB / "valid.txt").read_text(encoding="utf-8").splitlines()[:12]
    (tmp_path / "train.en").write_text("\n".join(raw) + "\n", encoding="utf-8")
    _run(BIN / "fairseq-tree-preprocess", "-s", "en", "--only-source", "--trainpref", tmp_path / "train",
         "--parser", "induced", "--parser-model", ckpt, "--destdir", tmp_path / "bin", "--workers", "2",
         "--shard-size", "5")
    from fairseq_tree.data.induction_text import normalize_word
    from fairseq_tree.inference.induce import induce_all, load
    from fairseq_tree.trees import read_tree_lines

    trees = list(read_tree_lines(str(tmp_path / "bin" / "train.en.trees")))
    assert len(trees) == 12
    model, task = load(str(ckpt))
    for tree in trees:
        pos = [k for k, w in enumerate(tree.words) if re.search(r"\w", w)]
        (word_spans,), _, _ = induce_all(model, task, [[normalize_word(tree.words[k]) for k in pos]])
        lifted = {(pos[i], pos[j - 1] + 1) for i, j in word_spans if j - i >= 2} | {(0, len(tree.words))}
        assert set(tree.spans) == lifted and set(tree.labels) == {"X"}
