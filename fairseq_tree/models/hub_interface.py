"""Hub interfaces, as fairseq users know them (``fairseq.hub_utils``; a model's hub interface beside it, as
``fairseq/models/roberta/hub_interface.py``): each model class's ``from_pretrained`` returns an ``nn.Module``
(``.to()``, ``.cuda()``, ``.cpu()``, ``.eval()``) that takes sentences in and gives results out (one result type
per call: :mod:`fairseq_tree.inference.results`). This module imports nothing that imports the models (the
inference library runs them through fairseq's loader); :mod:`fairseq_tree.hub` is the user-facing name.

    from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel
    t2s = Tree2SeqModel.from_pretrained("exported/tree2seq")          # a fairseq-tree-export folder
    t2s.translate(["(ROOT (S (NP (DT A) (NN man)) (VP (VBZ sleeps)) (. .)))"], beam=5)
    t2s = Tree2SeqModel.from_pretrained("exported/tree2seq", tree_input="raw", tree_parser="lal",
                                        tree_parser_model="exported/lal", device="cpu")

* :class:`TreeGeneratorHubInterface` (``tree2seq``): ``translate`` -> :class:`Translation` (a ``str`` with
  ``score`` and ``tokens``). Input: bracketed trees (``tree_input="brackets"``) or raw text (``"raw"``:
  tokenized and parsed with ``tree_parser`` = ``stanza`` | ``lal`` | ``induced`` and ``tree_parser_model``, or the
  folder's own ``parser/``), split into BPE subtrees with the data's ``bpe.codes`` exactly as
  ``fairseq-interactive`` does; the output BPE removed and detokenized (sacremoses, target language).
* :class:`ClassifierHubInterface` (``tree_classifier``, ``transformer_classifier``): ``classify`` ->
  :class:`Classification` (the class name, a ``str``, with ``probabilities``), as ``fairseq-tree-classify``.
* :class:`ParserHubInterface` (``lal_parser``): ``parse`` -> :class:`~fairseq_tree.trees.Tree` (``str()``:
  brackets; ``heads``, ``relations``, ``tags``), as ``fairseq-tree-parse``.
* :class:`InductionHubInterface` (``constituent_transformer``, ``structformer``): ``induce`` ->
  :class:`InducedStructure`, as ``fairseq-tree-induce``.

``model_name_or_path``: a directory (a ``fairseq-tree-export`` folder, or a training ``--save-dir``);
``checkpoint_file``: a file in it (default: ``model.pt`` in an exported folder, else ``checkpoint_best.pt``);
``data_name_or_path``: the data-bin (relative to the model directory when it starts with ``.``, fairseq's rule;
default: the exported folder, or the one the checkpoint was trained on). ``device``: None (default) is the GPU
when there is one, as fairseq's CLIs; ``"cpu"`` to opt out.
"""

from __future__ import annotations

import math
import os
from typing import List, Optional, Sequence, Union

import torch
from fairseq.hub_utils import GeneratorHubInterface
from torch import nn

from fairseq_tree.inference.checkpoint import load_checkpoint
from fairseq_tree.inference.classify import Classifier, examples_from_texts
from fairseq_tree.inference.export import PARSER_DIR, model_card, resolve_data, resolve_folder
from fairseq_tree.inference.induce import induce_all, load
from fairseq_tree.inference.parse import LALParser
from fairseq_tree.inference.results import Classification, InducedStructure, Translation
from fairseq_tree.parsers.raw_text import RawTextParser
from fairseq_tree.text.normalize import normalize_word
from fairseq_tree.text.tokenize import Tokenizer
from fairseq_tree.trees import bracket_line, escape_word, spans_to_brackets, tree_from_brackets
from fairseq_tree.view import Page, attention_item, attention_record, page, tree_records

Sentences = Union[str, Sequence[str]]


def checkpoint_path(model_name_or_path: str, checkpoint_file: Optional[str] = None) -> str:
    return resolve_folder(model_name_or_path, checkpoint_file, None)[0]


data_path = resolve_data  # (the hub's name of it, kept)


def _as_list(sentences: Sentences):
    return ([sentences], True) if isinstance(sentences, str) else (list(sentences), False)


def _folder_parser(folder: str) -> dict:
    """The raw-text parser an exported folder carries: {backend, model path} or {}."""
    parser = model_card(folder).get("parser")
    if not parser:
        return {}
    path = os.path.join(folder, parser["path"])
    if parser["backend"] == "stanza":
        return {"backend": "stanza", "model_dir": path}
    return {"backend": parser["backend"], "model": path}


class _ModelHub(nn.Module):
    """Base of the hubs that are not fairseq generators: the model is a registered submodule, so ``.to()``,
    ``.cuda()``, ``.cpu()`` and ``.eval()`` act on it, and every batch goes to :attr:`device`."""

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


class TreeGeneratorHubInterface(GeneratorHubInterface):
    """fairseq's generator hub with the tree side: inputs go through ``tree_translation``'s interactive path."""

    @classmethod
    def load(cls, model_name_or_path: str, checkpoint_file: Optional[str] = None,
             data_name_or_path: Optional[str] = None, device: Optional[str] = None, tree_parser: Optional[str] = None,
             tree_parser_model: Optional[str] = None, **overrides) -> "TreeGeneratorHubInterface":
        path, data = resolve_folder(model_name_or_path, checkpoint_file, data_name_or_path)
        options = {"tree_parser_device": device}
        own = _folder_parser(model_name_or_path)
        if tree_parser is None and own:
            tree_parser, tree_parser_model = own["backend"], own.get("model")
            options["stanza_model_dir"] = own.get("model_dir")
        if tree_parser is not None:
            options["tree_parser"] = tree_parser
        if tree_parser_model is not None:
            options["tree_parser_model"] = tree_parser_model
        for key in ("tree_input", "stanza_model_dir", "tree_bpe_codes"):
            if key in overrides:
                options[key] = overrides.pop(key)
        models, cfg, task = load_checkpoint(path, data, device, expect=("tree_translation",),
                                            user="Tree2SeqModel.from_pretrained", task_options=options, **overrides)
        return cls(cfg, task, models)

    def __init__(self, cfg, task, models):
        super().__init__(cfg, task, models)
        from sacremoses import MosesDetokenizer

        self._detok = MosesDetokenizer(lang=task.cfg.target_lang)

    def sample(self, sentences: Sentences, beam: int = 1, verbose: bool = False, **kwargs):
        """Sentences (raw or bracketed, as ``tree_input`` says) -> the best :class:`Translation` of each. A sentence
        over the model's positions (leaves + nodes) raises ValueError naming it, or with
        ``skip_invalid_size_inputs=True`` is skipped (logged and counted) and gives None in its place
        (:mod:`fairseq_tree.inference.input_policy`)."""
        sentences, single = _as_list(sentences)
        tokens = self.task.encode_tree_inputs(sentences)
        hypos = iter(self.generate(tokens, beam, verbose, **kwargs))
        skipped = set(self.task.skipped_inputs())
        out = [None if k in skipped else self._translation(next(hypos)[0]) for k in range(len(sentences))]
        return out[0] if single else out

    def _translation(self, hypo: dict) -> Translation:
        return Translation(self.decode(hypo["tokens"]), float(hypo["score"]) / math.log(2),
                           self.tgt_dict.string(hypo["tokens"]).split())

    def decode(self, tokens: torch.LongTensor) -> str:
        text = self.tgt_dict.string(tokens, "@@ ")
        return self._detok.detokenize(text.split()) if text else text

    def attention(self, sentences: Sentences, beam: int = 1, **kwargs) -> List[dict]:
        """The attention of each sentence, as attention-dump lines (:func:`fairseq_tree.view.records.attention_item`):
        the encoder's self-attention of every layer over ``[leaves; nodes]`` (heads averaged; rows and columns the
        BPE leaves and the nodes, ``LABEL s-e``), and the decoder's cross-attention on them (fairseq's alignment
        attention: the last layer, heads averaged) for the best translation (rows: its target pieces), with the
        BPE'd source tree."""
        sentences, _ = _as_list(sentences)
        return [self._attention_item(line, beam, **kwargs) for line in sentences]

    def _attention_item(self, line: str, beam: int, **kwargs) -> dict:
        tokens = self.task.encode_tree_inputs([line])
        dataset = self.task.build_dataset_for_inference(tokens, [len(t) for t in tokens])
        net = {k: v.to(self.device) for k, v in dataset.collater([dataset[0]])["net_input"].items()
               if k != "prev_output_tokens"}
        with torch.no_grad():
            enc = self.models[0].encoder(**net, return_attention=True)
        leaves = [self.src_dict[i] for i in net["src_tokens"][0].tolist()]
        spans = [tuple(x) for x in net["src_spans"][0].view(-1, 2).tolist()]
        nodes = [(s, e, self.task.label_dict[i]) for i, (s, e) in zip(net["src_nodes"][0].tolist(), spans)]
        cols = leaves + [f"{label} {s}-{e}" for s, e, label in nodes]
        maps = {f"encoder layer {k}": a[:, 0].float().mean(0) for k, a in enumerate(enc["attention"])}
        hypo = self.generate(self.task.encode_tree_inputs([line]), beam, **kwargs)[0][0]
        if hypo.get("attention") is not None:  # [source positions, target positions]
            target = [self.tgt_dict[i] for i in hypo["tokens"].tolist()]
            maps["cross-attention"] = {"rows": target, "cols": cols, "v": hypo["attention"].float().t()}
        tree = bracket_line([escape_word(w) for w in leaves], nodes)
        return attention_item(leaves, maps, tree, rows=cols, cols=cols)

    def view(self, sentences: Sentences, beam: int = 1, title: Optional[str] = None, **kwargs) -> Page:
        """:meth:`attention` drawn: a :class:`fairseq_tree.view.Page` (``.html``, ``.save(path)``, shown inline by
        Jupyter) of each source tree and its attention maps."""
        items = self.attention(sentences, beam, **kwargs)
        sents = [attention_record(k + 1, item) for k, item in enumerate(items)]
        return page("attention", sents, [["sentences", str(len(sents))]], title)


class ClassifierHubInterface(_ModelHub):
    """``classify(sentences, binary=False) -> Classification`` per sentence. Sentences: raw text (tokenized and
    parsed with ``parser`` and its options, as ``fairseq-tree-classify --parser``), bracketed syntactic trees, or
    SST-format class-labelled trees (``input_format`` ``auto`` tells them apart as the CLI does)."""

    def __init__(self, classifier: Classifier, parser: str = "stanza", tokenize: str = "moses", **parser_options):
        super().__init__()
        self.classifier, self.model = classifier, classifier.model
        self._parse = RawTextParser(parser, tokenize, "en", **parser_options)  # loads the parser on first raw text

    @classmethod
    def load(cls, model_name_or_path: str, checkpoint_file: Optional[str] = None,
             data_name_or_path: Optional[str] = None, device: Optional[str] = None, **kwargs
             ) -> "ClassifierHubInterface":
        path, data = resolve_folder(model_name_or_path, checkpoint_file, data_name_or_path)
        own = _folder_parser(model_name_or_path)
        if "parser" not in kwargs and own:
            kwargs["parser"] = own.pop("backend")
            kwargs.update({k: v for k, v in own.items() if k not in kwargs})
        return cls(Classifier(path, data, device=device), **kwargs)

    def classify(self, sentences: Sentences, binary: bool = False, input_format: str = "auto"):
        sentences, single = _as_list(sentences)
        scheme = self.classifier.scheme(binary)
        examples, _ = examples_from_texts(self.classifier, sentences, scheme, input_format, self._parse)
        probs = self.classifier.probabilities(examples, binary)
        out = [Classification(scheme.classes[int(p.argmax())], dict(zip(scheme.classes, p.tolist()))) for p in probs]
        return out[0] if single else out


class ParserHubInterface(_ModelHub):
    """``parse(sentences, tags=None) -> Tree`` per sentence (``str()``, ``.to_brackets(one_word=True)``,
    ``.labeled_spans(one_word=True)``, ``.heads``, ``.relations``, ``.tags``). A sentence is a list of tokens,
    or a string tokenized as the preprocessing does (sacremoses, PTB). A model that reads POS tags refuses
    sentences without them unless ``unknown_tags=True`` (see :class:`~fairseq_tree.inference.parse.LALParser`)."""

    def __init__(self, parser: LALParser, tokenize: str = "moses"):
        super().__init__()
        self.parser, self.model, self._tokenize = parser, parser.model, tokenize

    @classmethod
    def load(cls, model_name_or_path: str, checkpoint_file: Optional[str] = None,
             data_name_or_path: Optional[str] = None, device: Optional[str] = None, batch_size: int = 64,
             tokenize: str = "moses", unknown_tags: bool = False) -> "ParserHubInterface":
        path, data = resolve_folder(model_name_or_path, checkpoint_file, data_name_or_path)
        return cls(LALParser(path, data, batch_size, device, unknown_tags=unknown_tags), tokenize)

    def parse(self, sentences, tags: Optional[Sequence[Sequence[str]]] = None):
        sentences, single = _as_list(sentences)
        words = _tokenized(sentences, self._tokenize)
        out = self.parser.parse(words, tags)
        return out[0] if single else out

    def view(self, sentences, gold: Optional[Sequence[str]] = None, tags: Optional[Sequence[Sequence[str]]] = None,
             title: Optional[str] = None) -> Page:
        """Parse ``sentences`` and draw them: a :class:`fairseq_tree.view.Page` (``.html``, ``.save(path)``, shown
        inline by Jupyter). ``gold``: bracketed gold trees of the same sentences (read as ``parse`` writes them,
        one-word constituents kept): each pair scored by EVALB's rules, the missing / extra brackets marked."""
        sentences, _ = _as_list(sentences)
        trees = self.parse(sentences, tags)
        gold_trees = None if gold is None else [tree_from_brackets(g, "join", one_word=True) for g in gold]
        sents, summary = tree_records(trees, gold_trees)
        return page("compare" if gold is not None else "treebank", sents, summary, title)


class InductionHubInterface(_ModelHub):
    """``induce(sentences) -> InducedStructure`` per sentence: the unlabeled tree (half-open spans over the words,
    and one-line brackets with ``X`` nodes and preterminals) and, for StructFormer, each word's head (0 = root).
    Words are normalised as the model was trained (lower case, digits -> N) before the model sees them; results
    name the words as given. ``opts``: the model's ``induce`` options (``fairseq-tree-induce --opt``)."""

    def __init__(self, model, task, batch_size: int = 64):
        super().__init__()
        self.model, self.task, self.batch_size = model, task, batch_size

    @classmethod
    def load(cls, model_name_or_path: str, checkpoint_file: Optional[str] = None,
             data_name_or_path: Optional[str] = None, device: Optional[str] = None, batch_size: int = 64
             ) -> "InductionHubInterface":
        path, data = resolve_folder(model_name_or_path, checkpoint_file, data_name_or_path)
        model, task = load(path, data, device)
        if not hasattr(model, "induce"):
            raise ValueError(f"{path}: {type(model).__name__} induces no structure (a plain mlm_transformer?)")
        return cls(model, task, batch_size)

    def induce(self, sentences, **opts):
        sentences, single = _as_list(sentences)
        raw, spans, heads, _ = self._induce(sentences, False, **opts)
        out = [InducedStructure(w, [tuple(x) for x in s], spans_to_brackets(s, w, "X", "X") if w else "",
                                heads[k] if heads is not None else None)
               for k, (w, s) in enumerate(zip(raw, spans))]
        return out[0] if single else out

    def _induce(self, sentences: List, maps: bool, **opts):
        """-> (words as given, spans, heads or None, maps of every sentence if ``maps``)."""
        raw = _tokenized(sentences, "none")
        lower = not getattr(self.task.cfg, "eval_keep_case", False)
        digits = not getattr(self.task.cfg, "eval_keep_digits", False)
        words = [[normalize_word(w, lower, digits) for w in s] for s in raw]
        spans, heads, kept = induce_all(self.model, self.task, words, self.batch_size, len(words) if maps else 0,
                                        device=self.device, **opts)
        return raw, spans, heads, kept

    def attention(self, sentences, **opts) -> List[dict]:
        """``induce`` with the model's maps (the constituent prior of every layer; StructFormer's dependency
        distribution): one attention-dump item per sentence (:func:`fairseq_tree.view.records.attention_item`,
        what ``fairseq-tree-induce --dump-attention`` writes), with the induced tree."""
        sentences, _ = _as_list(sentences)
        raw, spans, _, maps = self._induce(sentences, True, **opts)
        return [attention_item(w, maps.get(k, {}), spans_to_brackets(s, w, "X", "X") if w else None)
                for k, (w, s) in enumerate(zip(raw, spans))]

    def view(self, sentences, title: Optional[str] = None, **opts) -> Page:
        """Induce ``sentences`` and draw them: a :class:`fairseq_tree.view.Page` (``.html``, ``.save(path)``, shown
        inline by Jupyter) of the induced trees, the induced dependency arcs (StructFormer) and the model's maps
        (the constituent prior per layer ..) as heat maps."""
        sentences, _ = _as_list(sentences)
        raw, spans, heads, maps = self._induce(sentences, True, **opts)
        sents = []
        for k, (w, s) in enumerate(zip(raw, spans)):
            tree = spans_to_brackets(s, w, "X", "X") if w else None
            rec = attention_record(k + 1, attention_item(w, maps.get(k, {}), tree))
            if heads is not None and heads[k]:
                rec["arcs"] = [{"title": "induced dependencies", "h": list(heads[k]), "g": None}]
            sents.append(rec)
        return page("induced", sents, [["sentences", str(len(sents))]], title)


def _tokenized(sentences: Sequence, tokenize: str) -> List[List[str]]:
    """Token lists as given; strings split by the pipeline's tokenizer (``none``: on whitespace)."""

    tok = Tokenizer(tokenize, "en", ptb=True)
    return [list(s) if not isinstance(s, str) else tok(s) for s in sentences]


class FromPretrained:
    """Model mixin (before fairseq's base class): ``Model.from_pretrained(model_name_or_path, checkpoint_file,
    data_name_or_path, **kwargs)`` returns the hub interface named by ``HUB_INTERFACE``."""

    HUB_INTERFACE = "TreeGeneratorHubInterface"

    @classmethod
    def from_pretrained(cls, model_name_or_path: str, checkpoint_file: Optional[str] = None,
                        data_name_or_path: Optional[str] = None, **kwargs):
        return globals()[cls.HUB_INTERFACE].load(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)


__all__ = ["ClassifierHubInterface", "FromPretrained", "InductionHubInterface", "ParserHubInterface",
           "TreeGeneratorHubInterface", "checkpoint_path", "data_path", "PARSER_DIR"]
