"""What the model files share (fairseq_tree/models/architecture.py), as a user meets it: a preset fills only the
options left unset, and a model trained under the wrong task (``fairseq-train --task translation --arch
tree2seq_tiny``) stops at once with the task it needs. Bugs of one line that tests/unit/test_architectures.py let
through (scripts/mutation/, docs/development.md)."""

import argparse

import pytest
from fairseq.data import Dictionary
from fairseq.tasks.translation import TranslationConfig, TranslationTask

import fairseq_tree  # noqa: F401  (registers the models and tasks)
from fairseq_tree.models.architecture import set_default
from fairseq_tree.models.lal_parser import LALParserModel
from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel
from fairseq_tree.models.tree_classifier import TreeClassifierModel
from fairseq_tree.tasks.tree_translation import TreeTranslationConfig, TreeTranslationTask


def test_a_preset_fills_only_what_is_unset():
    args = argparse.Namespace(dropout=None, layers=0, heads=4)
    for name, value in (("dropout", 0.3), ("layers", 6), ("heads", 8), ("width", 512)):
        set_default(args, name, value)
    assert vars(args) == {"dropout": 0.3, "layers": 0, "heads": 4, "width": 512}  # 0 is a value the user gave


@pytest.mark.parametrize("model,needs", [
    (Tree2SeqModel, "tree2seq models need the 'tree_translation' task, not TranslationTask: run fairseq-train --task "
                    "tree_translation; its checkpoints run with fairseq-generate / fairseq-interactive DATA --task "
                    "tree_translation --user-dir $(fairseq-tree-user-dir)"),
    (TreeClassifierModel, "tree_classifier models need the 'tree_classification' task, not TranslationTask: run "
                          "fairseq-train --task tree_classification; its checkpoints run with fairseq-tree-classify"),
    (LALParserModel, "lal_parser models need the 'constituency_parsing' task, not TranslationTask: run fairseq-train "
                     "--task constituency_parsing; its checkpoints run with fairseq-tree-parse"),
])
def test_a_model_under_fairseqs_translation_task_names_the_task_it_needs(model, needs):
    d = Dictionary()
    with pytest.raises(ValueError) as e:
        model.build_model(argparse.Namespace(), TranslationTask(TranslationConfig(), d, d))
    assert str(e.value).startswith(needs)


def test_under_its_own_task_the_model_builds():
    from fairseq.models import ARCH_CONFIG_REGISTRY

    d = Dictionary()
    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY["tree2seq_tiny"](args)
    model = Tree2SeqModel.build_model(args, TreeTranslationTask(TreeTranslationConfig(), d, d, d))
    assert isinstance(model, Tree2SeqModel)


@pytest.mark.parametrize("module,arch", [("structformer", "structformer_tiny"), ("mlm_transformer",
                                                                               "mlm_transformer_small")])
def test_a_standalone_model_records_the_architecture_that_rebuilds_it(module, arch):
    """build_standalone (benchmarks, notebooks): the overrides win, the preset fills the rest, and the args (what a
    checkpoint saves as its model config) name an architecture that fairseq maps back to the model's class."""
    import importlib

    from fairseq.models import ARCH_MODEL_REGISTRY

    d = Dictionary()
    for w in "the cat sat".split():
        d.add_symbol(w)
    model = importlib.import_module(f"fairseq_tree.models.{module}").build_standalone(d, arch, encoder_layers=1)
    assert model.args.encoder_layers == 1 and model.args.encoder_embed_dim is not None
    assert ARCH_MODEL_REGISTRY[model.args.arch] is type(model) and model.args.arch == arch


@pytest.mark.parametrize("ours,fairseqs", [("tree2seq_wmt_en_de", "transformer_wmt_en_de"),
                                           ("tree2seq_wmt_en_de_big", "transformer_vaswani_wmt_en_de_big"),
                                           ("tree2seq_iwslt_de_en", "transformer_iwslt_de_en")])
def test_the_wmt_and_iwslt_presets_are_fairseqs_own_plus_the_tree_flags(ours, fairseqs):
    """Every option fairseq's preset sets has its value in ours (d, FFN, heads, layers, dropout 0.3 of the big
    model ...); ours adds only the tree flags, at the paper's defaults (eager tree work, nothing compiled)."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    from fairseq_tree.models.tree2seq_transformer import TREE_FLAGS, Tree2SeqConfig

    theirs, mine = argparse.Namespace(), argparse.Namespace()
    ARCH_CONFIG_REGISTRY[fairseqs](theirs)
    ARCH_CONFIG_REGISTRY[ours](mine)
    assert {k: getattr(mine, k, "unset") for k in vars(theirs)} == vars(theirs)
    assert set(vars(mine)) - set(vars(theirs)) == set(TREE_FLAGS)
    assert all(getattr(mine, k) == getattr(Tree2SeqConfig(), k) for k in TREE_FLAGS)
    assert (mine.tree_kernels, mine.tree_compile, mine.tree_compile_backend) == ("eager", False, "inductor")


@pytest.mark.parametrize("arch,sizes", [("tree2seq_tiny", (64, 128, 2, 2)),
                                        ("tree2seq_multi30k_tiny", (128, 256, 4, 4))])
def test_the_small_tree2seq_presets_have_their_documented_sizes(arch, sizes):
    """(d, FFN, heads, layers) on both sides: the tests' tiny model, and Wu et al. 2021's Multi30k
    ``transformer_tiny`` (d 128, FFN 256, 4 heads, 4 + 4 layers) that the anchor rows are measured at."""
    from fairseq.models import ARCH_CONFIG_REGISTRY

    args = argparse.Namespace()
    ARCH_CONFIG_REGISTRY[arch](args)
    for side in ("encoder", "decoder"):
        assert tuple(getattr(args, f"{side}_{k}") for k in ("embed_dim", "ffn_embed_dim", "attention_heads",
                                                              "layers")) == sizes
