"""A new user's first hour with tree2seq inference (issue 50, items 1, 8, 9), through the real CLIs and the hub:
a bad ``--tree-input`` is refused by argparse; an input whose first line fails stops with exit status 1 naming the
fix, a bad line after a good one is skipped with a count; a sentence over the model's positions is refused naming
the flag that skips it, or skipped with a count (fairseq-interactive and the hub alike); fairseq-generate without
``-s/-t`` on a data-bin of one language pair."""

import os
import subprocess

import pytest
from conftest import BIN, REPO, SHARED
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from test_tree2seq import data_bin  # noqa: F401  (the fixture: 64 PTB trees -> their lower-cased words)

pytestmark = pytest.mark.slow(minutes=1.5)

USER_DIR = str(REPO / "fairseq_tree")
PTB = SHARED / "data" / "ptb_sample"
TREES = (PTB / "valid.mrg").read_text().splitlines()
#: over the model's 1,024 positions: the data's BPE splits "dog" into do@@ g (a node over 2 leaves), so
#: 600 x (the + do@@ g) + "." = 1,801 leaves and 600 NP + 600 split words + S (ROOT collapsed) = 1,201 nodes: 3,002
LONG = "(ROOT (S " + " ".join("(NP (DT the) (NN dog))" for _ in range(600)) + " (. .)))"


@pytest.fixture(scope="module")
def ckpt(data_bin, tmp_path_factory):  # noqa: F811
    """A tree2seq_tiny checkpoint after 5 updates: what it translates does not matter here, only which lines."""
    save = tmp_path_factory.mktemp("first_hour") / "ckpt"
    sh("fairseq-train", data_bin, "--user-dir", USER_DIR, "--task", "tree_translation", "--arch", "tree2seq_tiny",
       "--share-all-embeddings", "--optimizer", "adam", "--lr", "5e-3", "--max-tokens", "4000", "--max-update", "5",
       "--criterion", "cross_entropy", "--cpu", "--num-workers", "0", "--disable-validation",
       "--no-epoch-checkpoints", "--save-dir", save, check=True)
    return save / "checkpoint_last.pt"


def sh(tool, *args, stdin=None, check=False):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    proc = subprocess.run([str(BIN / tool), *map(str, args)], capture_output=True, text=True, input=stdin, env=env)
    assert not check or proc.returncode == 0, proc.stderr[-3000:]
    return proc


def interactive(data, ckpt, lines, *extra):
    return sh("fairseq-interactive", data, "--user-dir", USER_DIR, "--task", "tree_translation", "--path", ckpt,
              "--cpu", "--beam", "1", "--max-len-b", "2", *extra, stdin="\n".join(lines) + "\n")


def hypothesis_ids(proc):
    return sorted(int(line.split("\t")[0][2:]) for line in proc.stdout.splitlines() if line.startswith("H-"))


# ------------------------------------------------------------------------------------- item 1: bad --tree-input
def test_a_bad_tree_input_is_refused_by_argparse(data_bin, ckpt):  # noqa: F811
    proc = interactive(data_bin, ckpt, TREES[:1], "--tree-input", "raww")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "argument --tree-input: invalid choice: 'raww' (choose from 'brackets', 'raw')" in proc.stderr


def test_raw_text_without_tree_input_raw_stops_and_names_the_fix(data_bin, ckpt):  # noqa: F811
    proc = interactive(data_bin, ckpt, ["A man sleeps .", "The dog barked ."])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert ("fairseq-interactive: error: input line 1: word 'A' outside any bracket: not a bracketed tree; for raw "
            "text, give --tree-input raw (with --tree-parser and its model)") in proc.stderr
    assert "nothing was translated" in proc.stderr and not hypothesis_ids(proc)


def test_a_bad_line_after_a_good_one_is_skipped_and_counted(data_bin, ckpt):  # noqa: F811
    """Lines 2 (raw text), 3 (over length, with --skip-invalid-size-inputs-valid-test) and 4 (a malformed tree:
    no raw-text hint) are skipped with the count so far; the others keep their numbers. With --buffer-size 2 the
    first chunk holds a good line: no stop."""
    proc = interactive(data_bin, ckpt, [TREES[0], "A man sleeps .", LONG, "(S (NP broken", TREES[1]],
                       "--skip-invalid-size-inputs-valid-test")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert hypothesis_ids(proc) == [0, 4]
    assert "input line 4: 2 unclosed '(' at end of input (skipped); 3 of 4 input lines skipped so far" in proc.stderr
    assert "input line 2: word 'A' outside any bracket: not a bracketed tree; for raw text, give --tree-input raw"\
        in proc.stderr and "(skipped); 1 of 2 input lines skipped so far" in proc.stderr
    assert "input line 3: source has 3002 leaves + nodes > the model's maximum 1024 (skipped); 2 of 3 input lines " \
        "skipped so far" in proc.stderr
    proc = interactive(data_bin, ckpt, ["A man sleeps .", TREES[1]], "--buffer-size", "2")
    assert proc.returncode == 0 and hypothesis_ids(proc) == [1], proc.stderr[-2000:]
    assert "input line 1: " in proc.stderr and "1 of 2 input lines skipped so far" in proc.stderr


# ------------------------------------------------------------------------------- item 8: over the model's length
def test_interactive_refuses_a_sentence_over_the_models_positions_naming_the_flag(data_bin, ckpt):  # noqa: F811
    proc = interactive(data_bin, ckpt, [TREES[0], LONG])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert ("fairseq-interactive: error: input line 2: source has 3002 leaves + nodes > the model's maximum 1024: "
            "split the sentence, or give --skip-invalid-size-inputs-valid-test to skip such sentences") in proc.stderr


@pytest.fixture(scope="module")
def hub(data_bin, ckpt):  # noqa: F811
    from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel

    return Tree2SeqModel.from_pretrained(str(ckpt.parent), ckpt.name, str(data_bin), device="cpu")


def test_the_hub_refuses_or_skips_a_sentence_over_the_models_positions(hub):
    with pytest.raises(ValueError, match=r"^sentence 2: source has 3002 leaves \+ nodes > the model's maximum "
                                         r"1024: .*skip_invalid_size_inputs=True"):
        hub.translate([TREES[0], LONG], beam=1, max_len_b=2)
    out = hub.translate([TREES[0], LONG, TREES[1]], beam=1, max_len_b=2, skip_invalid_size_inputs=True)
    assert out[1] is None and out[0] == hub.translate(TREES[0], beam=1, max_len_b=2)
    assert out[2] == hub.translate(TREES[1], beam=1, max_len_b=2)
    assert hub.translate(LONG, beam=1, skip_invalid_size_inputs=True) is None


def test_the_hub_names_the_fix_for_raw_text_and_refuses_a_bad_tree_input(hub, data_bin, ckpt):  # noqa: F811
    with pytest.raises(ValueError, match='^sentence 2: .* not a bracketed tree; for raw text, give tree_input="raw"'):
        hub.translate([TREES[0], "A man sleeps ."], beam=1)
    from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel

    with pytest.raises(ValueError, match="raww"):  # at load, before any sentence
        Tree2SeqModel.from_pretrained(str(ckpt.parent), ckpt.name, str(data_bin), device="cpu", tree_input="raww")


# ------------------------------------------------------------------------- item 9: -s/-t from the data directory
def test_generate_without_languages_on_a_one_pair_data_bin(data_bin, ckpt):  # noqa: F811
    """With --tokenizer moses, fairseq handed the tokenizer source_lang=None before the task could infer it."""
    proc = sh("fairseq-generate", data_bin, "--user-dir", USER_DIR, "--task", "tree_translation", "--path", ckpt,
              "--gen-subset", "valid", "--beam", "1", "--max-len-b", "2", "--batch-size", "64", "--cpu",
              "--remove-bpe", "--tokenizer", "moses")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sum(line.startswith("D-") for line in proc.stdout.splitlines()) == 64


@pytest.mark.parametrize("before,after,expect", [([], [], ("en", "xx")), (["-t", "xx"], [], ("en", "xx")),
                                                 (["-s", "xx", "-t", "en"], [], ("xx", "en")),
                                                 ([], ["-s", "xx", "-t", "en"], ("xx", "en"))])
def test_the_command_line_fills_in_the_one_language_pair(data_bin, before, after, expect):  # noqa: F811
    """-s/-t given before DATA are kept, after it they override; a missing one comes from the data's one pair."""
    args = options.parse_args_and_arch(options.get_generation_parser(), [
        *before, str(data_bin), "--user-dir", USER_DIR, "--task", "tree_translation", "--tokenizer", "moses", *after])
    cfg = convert_namespace_to_omegaconf(args)
    assert (cfg.task.source_lang, cfg.task.target_lang) == expect
    assert (cfg.tokenizer.source_lang, cfg.tokenizer.target_lang) == expect


def test_a_data_bin_of_two_pairs_needs_the_languages(data_bin, tmp_path):  # noqa: F811
    for name in os.listdir(data_bin):  # the same datasets under en-xx and xx-en
        os.symlink(data_bin / name, tmp_path / name)
        if ".en-xx." in name:
            os.symlink(data_bin / name, tmp_path / name.replace(".en-xx.", ".xx-en."))
    args = options.parse_args_and_arch(options.get_generation_parser(), [
        str(tmp_path), "--user-dir", USER_DIR, "--task", "tree_translation"])
    assert args.source_lang is None and args.target_lang is None
    with pytest.raises(ValueError, match=r"give -s SRC -t TGT: .* it holds en-xx, xx-en"):
        tasks.setup_task(args)
    args = options.parse_args_and_arch(options.get_generation_parser(), [
        str(tmp_path), "--user-dir", USER_DIR, "--task", "tree_translation", "-s", "en", "-t", "xx"])
    assert tasks.setup_task(args).cfg.source_lang == "en"
