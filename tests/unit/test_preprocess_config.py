"""The pipeline's config dataclass and fairseq-tree-preprocess's options are the same: names, order, defaults."""

import dataclasses

import pytest

from fairseq_tree.cli.preprocess import get_parser
from fairseq_tree.preprocess.config import PreprocessConfig


def test_fields_are_the_cli_options_with_their_defaults():
    actions = [a for a in get_parser()._actions if a.dest != "help"]
    fields = dataclasses.fields(PreprocessConfig)
    dests = list(dict.fromkeys(a.dest for a in actions))  # --cpu is --device cpu: one field
    assert [f.name for f in fields] == dests  # the order preprocess.json's command keeps
    defaults = dataclasses.asdict(PreprocessConfig())
    assert {a.dest: a.default for a in actions} == defaults


def test_from_args_takes_the_namespace_and_refuses_unknown_options():
    args = get_parser().parse_args(["-s", "en", "-t", "de", "--trainpref", "t", "--workers", "3"])
    cfg = PreprocessConfig.from_args(args)
    assert (cfg.source_lang, cfg.target_lang, cfg.workers, cfg.stanza_lang) == ("en", "de", 3, "en")
    assert dataclasses.asdict(cfg) == vars(args)
    args.not_an_option = 1
    with pytest.raises(TypeError, match="not_an_option"):
        PreprocessConfig.from_args(args)
