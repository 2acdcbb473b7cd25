"""Hub interfaces, as fairseq users know them (``fairseq.hub_utils``; a model's hub interface beside it, as
``fairseq/models/roberta/hub_interface.py``): each model class's ``from_pretrained`` returns an object that takes
sentences in and gives results out. This module imports nothing that imports the models (the inference library
runs them through fairseq's loader); :mod:`fairseq_tree.hub` is the user-facing name of the same classes.

    from fairseq_tree.models.tree2seq_transformer import Tree2SeqModel
    t2s = Tree2SeqModel.from_pretrained("ckpt", checkpoint_file="checkpoint_best.pt",
                                        data_name_or_path="data-bin/multi30k.en-de",
                                        tree_input="raw", tree_parser="stanza", stanza_model_dir="models/stanza")
    t2s.translate(["A man in an orange hat ."], beam=5)

* :class:`TreeGeneratorHubInterface` (``tree2seq``): ``translate`` parses (``tree_input="raw"``: tokenized and
  parsed with ``tree_parser``; ``"brackets"``: one bracketed tree per sentence), splits words into BPE subtrees
  with the data's ``bpe.codes`` exactly as ``fairseq-interactive`` does (the task's own input path), generates
  with fairseq's ``GeneratorHubInterface``, removes BPE and detokenizes (sacremoses, target language): the
  ``D-`` lines of ``fairseq-interactive --remove-bpe --tokenizer moses``.
* :class:`ClassifierHubInterface` (``tree_classifier``, ``transformer_classifier``): ``classify`` -> class
  names, as ``fairseq-tree-classify`` writes them (:class:`fairseq_tree.inference.classify.Classifier`).
* :class:`ParserHubInterface` (``lal_parser``): ``parse`` -> brackets, heads and relations, as
  ``fairseq-tree-parse`` (:class:`fairseq_tree.inference.parse.LALParser`).
* :class:`InductionHubInterface` (``constituent_transformer``, ``structformer``): ``induce`` -> unlabeled trees
  (and StructFormer's heads), as ``fairseq-tree-induce`` (:func:`fairseq_tree.inference.induce.induce_all`).

``model_name_or_path`` is a directory, ``checkpoint_file`` a file in it; ``data_name_or_path`` the data-bin
(relative to the model directory when it starts with ``.``, fairseq's rule), default: the one the checkpoint
was trained on.
"""

from __future__ import annotations

import os
from typing import List, Optional, Sequence, Union

import torch
from fairseq.hub_utils import GeneratorHubInterface

from fairseq_tree.evaluation.unsupervised import spans_to_brackets
from fairseq_tree.inference.checkpoint import load_checkpoint
from fairseq_tree.inference.classify import Classifier, examples_from_texts
from fairseq_tree.inference.induce import induce_all, load
from fairseq_tree.inference.parse import LALParser
from fairseq_tree.parsers.raw_text import RawTextParser
from fairseq_tree.text.normalize import normalize_word
from fairseq_tree.text.tokenize import Tokenizer
from fairseq_tree.trees import bracket_line, escape_word, tree_from_brackets
from fairseq_tree.view import Page, attention_item, attention_record, page, tree_records

Sentences = Union[str, Sequence[str]]


def checkpoint_path(model_name_or_path: str, checkpoint_file: str) -> str:
    path = os.path.join(model_name_or_path, checkpoint_file)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such checkpoint")
    return path


def data_path(model_name_or_path: str, data_name_or_path: Optional[str]) -> Optional[str]:
    """fairseq's rule: a path starting with '.' is relative to the model directory."""
    if data_name_or_path is None:
        return None
    if data_name_or_path.startswith("."):
        return os.path.abspath(os.path.join(model_name_or_path, data_name_or_path))
    return data_name_or_path


def _as_list(sentences: Sentences):
    return ([sentences], True) if isinstance(sentences, str) else (list(sentences), False)


class TreeGeneratorHubInterface(GeneratorHubInterface):
    """fairseq's generator hub with the tree side: inputs go through ``tree_translation``'s interactive path."""

    @classmethod
    def load(cls, model_name_or_path: str, checkpoint_file: str = "checkpoint_best.pt",
             data_name_or_path: Optional[str] = None, **overrides) -> "TreeGeneratorHubInterface":

        models, cfg, task = load_checkpoint(checkpoint_path(model_name_or_path, checkpoint_file),
                                            data_path(model_name_or_path, data_name_or_path), **overrides)
        return cls(cfg, task, models)

    def __init__(self, cfg, task, models):
        super().__init__(cfg, task, models)
        from sacremoses import MosesDetokenizer

        self._detok = MosesDetokenizer(lang=task.cfg.target_lang)

    def sample(self, sentences: Sentences, beam: int = 1, verbose: bool = False, **kwargs):
        """Sentences (raw or bracketed, as ``tree_input`` says) -> detokenized best translations."""
        sentences, single = _as_list(sentences)
        tokens, _ = self.task.get_interactive_tokens_and_lengths(sentences, None)
        hypos = self.generate(tokens, beam, verbose, **kwargs)
        out = [self.decode(h[0]["tokens"]) for h in hypos]
        return out[0] if single else out

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
        tokens, lengths = self.task.get_interactive_tokens_and_lengths([line], None)
        dataset = self.task.build_dataset_for_inference(tokens, lengths)
        net = {k: v.to(self.device) for k, v in dataset.collater([dataset[0]])["net_input"].items()
               if k != "prev_output_tokens"}
        with torch.no_grad():
            enc = self.models[0].encoder(**net, return_attention=True)
        leaves = [self.src_dict[i] for i in net["src_tokens"][0].tolist()]
        spans = [tuple(x) for x in net["src_spans"][0].view(-1, 2).tolist()]
        nodes = [(s, e, self.task.label_dict[i]) for i, (s, e) in zip(net["src_nodes"][0].tolist(), spans)]
        cols = leaves + [f"{label} {s}-{e}" for s, e, label in nodes]
        maps = {f"encoder layer {k}": a[:, 0].float().mean(0) for k, a in enumerate(enc["attention"])}
        tokens, _ = self.task.get_interactive_tokens_and_lengths([line], None)
        hypo = self.generate(tokens, beam, **kwargs)[0][0]
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


class ClassifierHubInterface:
    """``classify(sentences, binary=False) -> class names``. Sentences: raw text (tokenized and parsed with
    ``parser`` and its options, as ``fairseq-tree-classify --parser``), bracketed syntactic trees, or
    SST-format class-labelled trees (``input_format`` ``auto`` tells them apart as the CLI does)."""

    def __init__(self, classifier, parser: str = "stanza", tokenize: str = "moses", **parser_options):
        self.classifier = classifier
        self._parse = RawTextParser(parser, tokenize, "en", **parser_options)  # loads the parser on first raw text

    @classmethod
    def load(cls, model_name_or_path: str, checkpoint_file: str = "checkpoint_best.pt",
             data_name_or_path: Optional[str] = None, device: str = "cpu", **kwargs) -> "ClassifierHubInterface":

        clf = Classifier(checkpoint_path(model_name_or_path, checkpoint_file),
                         data_path(model_name_or_path, data_name_or_path), device=device)
        return cls(clf, **kwargs)

    def classify(self, sentences: Sentences, binary: bool = False, input_format: str = "auto"):
        sentences, single = _as_list(sentences)
        scheme = self.classifier.scheme(binary)
        examples, _ = examples_from_texts(self.classifier, sentences, scheme, input_format, self._parse)
        preds, _ = self.classifier.predict(examples, binary)
        out = [scheme.classes[p] for p in preds]
        return out[0] if single else out


class ParserHubInterface:
    """``parse(sentences, tags=None) -> [Tree]`` (``.to_brackets(one_word=True)``, ``.labeled_spans(one_word=True)``,
    ``.heads``, ``.relations``, ``.tags``).
    A sentence is a list of tokens, or a string tokenized as the preprocessing does (sacremoses, PTB)."""

    def __init__(self, parser, tokenize: str = "moses"):
        self.parser, self._tokenize = parser, tokenize

    @classmethod
    def load(cls, model_name_or_path: str, checkpoint_file: str = "checkpoint_best.pt",
             data_name_or_path: Optional[str] = None, device: str = "cpu", batch_size: int = 64,
             tokenize: str = "moses") -> "ParserHubInterface":

        return cls(LALParser(checkpoint_path(model_name_or_path, checkpoint_file),
                             data_path(model_name_or_path, data_name_or_path), batch_size, device), tokenize)

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


class InductionHubInterface:
    """``induce(sentences) -> [{"words", "spans", "tree", "heads"}]``: the unlabeled tree (half-open spans over the
    words, and one-line brackets with ``X`` labels) and, for StructFormer, each word's head (0 = root). Words are
    normalised as the model was trained (lower case, digits -> N) before the model sees them; results name the
    words as given. ``opts``: the model's ``induce`` options (``fairseq-tree-induce --opt``)."""

    def __init__(self, model, task, device: str = "cpu", batch_size: int = 64):
        self.model, self.task, self.device, self.batch_size = model, task, device, batch_size

    @classmethod
    def load(cls, model_name_or_path: str, checkpoint_file: str = "checkpoint_best.pt",
             data_name_or_path: Optional[str] = None, device: str = "cpu", batch_size: int = 64
             ) -> "InductionHubInterface":

        model, task = load(checkpoint_path(model_name_or_path, checkpoint_file),
                           data_path(model_name_or_path, data_name_or_path), device)
        if not hasattr(model, "induce"):
            raise ValueError(f"{type(model).__name__} induces no structure")
        return cls(model, task, device, batch_size)

    def induce(self, sentences, **opts):
        sentences, single = _as_list(sentences)
        raw, spans, heads, _ = self._induce(sentences, False, **opts)
        out = [{"words": w, "spans": s, "tree": spans_to_brackets(s, w) if w else "",
                "heads": heads[k] if heads is not None else None}
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
        return [attention_item(w, maps.get(k, {}), spans_to_brackets(s, w) if w else None)
                for k, (w, s) in enumerate(zip(raw, spans))]

    def view(self, sentences, title: Optional[str] = None, **opts) -> Page:
        """Induce ``sentences`` and draw them: a :class:`fairseq_tree.view.Page` (``.html``, ``.save(path)``, shown
        inline by Jupyter) of the induced trees, the induced dependency arcs (StructFormer) and the model's maps
        (the constituent prior per layer ..) as heat maps."""
        sentences, _ = _as_list(sentences)
        raw, spans, heads, maps = self._induce(sentences, True, **opts)
        sents = []
        for k, (w, s) in enumerate(zip(raw, spans)):
            rec = attention_record(k + 1, attention_item(w, maps.get(k, {}), spans_to_brackets(s, w) if w else None))
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
    def from_pretrained(cls, model_name_or_path: str, checkpoint_file: str = "checkpoint_best.pt",
                        data_name_or_path: Optional[str] = None, **kwargs):
        return globals()[cls.HUB_INTERFACE].load(model_name_or_path, checkpoint_file, data_name_or_path, **kwargs)
