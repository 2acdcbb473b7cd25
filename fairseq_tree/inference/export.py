"""Portable model folders (``fairseq-tree-export CKPT OUT``): everything a checkpoint needs at inference time in
one directory that loads from any working directory with nothing else, as a fairseq hub archive does:

* ``model.pt``: the checkpoint (the optimizer state dropped unless asked for), its recorded data directory
  replaced by ``.`` (the folder itself; fairseq's rule: relative to the model directory) and its languages
  written out, so loading needs no training files to infer them;
* the data directory's dictionaries (``dict.*.txt``), ``bpe.codes`` and ``classification.json``: the
  vocabularies, the node-label and class dictionaries, the BPE a tree2seq or classifier model splits raw words with;
* ``parser/``: the parser the model reads raw text with, when given (a ``lal`` / ``induced`` checkpoint, itself
  exported, or a stanza model directory);
* ``model_card.json``: task, arch, parameter count, the training data and flags, the parser, and scores when
  given.

``resolve_folder`` is how the hubs find the checkpoint and the data in a folder, exported or not."""

from __future__ import annotations

import json
import os
import shutil
from typing import Optional, Tuple

from fairseq_tree.safe_loading import load as safe_load

MODEL_FILE = "model.pt"
MODEL_CARD = "model_card.json"
PARSER_DIR = "parser"
#: data files a model reads at inference (besides the binarized splits, which it never reads)
DATA_FILES = ("bpe.codes", "classification.json", "dict.txt")


def resolve_folder(model_name_or_path: str, checkpoint_file: Optional[str],
                   data_name_or_path: Optional[str]) -> Tuple[str, Optional[str]]:
    """-> (checkpoint path, data directory or None: the one the checkpoint records). ``checkpoint_file`` None:
    ``model.pt`` in an exported folder, else ``checkpoint_best.pt``. ``data_name_or_path``: fairseq's rule, a
    path starting with ``.`` is relative to the model directory; None in an exported folder: the folder."""
    exported = os.path.exists(os.path.join(model_name_or_path, MODEL_CARD))
    name = checkpoint_file or (MODEL_FILE if exported else "checkpoint_best.pt")
    path = os.path.join(model_name_or_path, name)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such checkpoint")
    return path, resolve_data(model_name_or_path, data_name_or_path)


def resolve_data(model_name_or_path: str, data_name_or_path: Optional[str]) -> Optional[str]:
    """The data directory of a model folder: ``data_name_or_path`` (fairseq's rule: relative to the model
    directory when it starts with ``.``), else the folder itself when exported, else None (the checkpoint's own)."""
    if data_name_or_path is None:
        exported = os.path.exists(os.path.join(model_name_or_path, MODEL_CARD))
        return os.path.abspath(model_name_or_path) if exported else None
    if data_name_or_path.startswith("."):
        return os.path.abspath(os.path.join(model_name_or_path, data_name_or_path))
    return data_name_or_path


def model_card(folder: str) -> dict:
    """The folder's ``model_card.json`` ({} when it is not an exported folder)."""
    path = os.path.join(folder, MODEL_CARD)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def export(checkpoint: str, out: str, data: Optional[str] = None, keep_optimizer: bool = False,
           parser: Optional[str] = None, scores: Optional[dict] = None) -> dict:
    """Write the portable folder ``out`` (see the module docstring) -> its model card. ``data``: the data
    directory when not the one the checkpoint records; ``parser``: a parser checkpoint (exported into
    ``out/parser/``) or a stanza model directory (copied). FileNotFoundError names what is missing."""
    state = safe_load(checkpoint)
    cfg = state.get("cfg")
    if cfg is None or cfg.get("task") is None:
        raise ValueError(f"{checkpoint}: no hydra config (a checkpoint of fairseq < 0.10?): not supported")
    task_cfg = cfg["task"]  # fairseq saves its config as plain containers (OmegaConf.to_container)
    src_data = data or _first_path(task_cfg.get("data"))
    if not src_data or not os.path.isdir(src_data):
        raise FileNotFoundError(f"{checkpoint} was trained on data {src_data!r}, which is not a directory here: "
                                "pass --data DIR (the data-bin with its dictionaries)")
    os.makedirs(out, exist_ok=True)
    copied = _copy_data_files(src_data, out)
    _write_languages(task_cfg, src_data)
    card = _card(state, checkpoint, src_data, copied, scores)
    task_cfg["data"] = "."
    if parser:
        card["parser"] = _export_parser(parser, os.path.join(out, PARSER_DIR))
    if not keep_optimizer:
        state["last_optimizer_state"] = None
    _atomic_save(state, os.path.join(out, MODEL_FILE))
    with open(os.path.join(out, MODEL_CARD), "w", encoding="utf-8") as f:
        json.dump(card, f, indent=1)
        f.write("\n")
    return card


def _first_path(data: Optional[str]) -> Optional[str]:
    return data.split(os.pathsep)[0] if data else None


def _copy_data_files(src: str, out: str) -> list:
    names = sorted(f for f in os.listdir(src) if f in DATA_FILES or (f.startswith("dict.") and f.endswith(".txt")))
    if not names:
        raise FileNotFoundError(f"{src}: no dictionaries (dict*.txt): is it the model's data-bin?")
    for name in names:
        shutil.copyfile(os.path.join(src, name), os.path.join(out, name))
    return names


def _write_languages(task_cfg, data: str) -> None:
    """Languages a translation task infers from its training files' names (fairseq's ``infer_language_pair``),
    which an exported folder does not hold: written into the config."""
    if "target_lang" not in task_cfg or (task_cfg["source_lang"] and task_cfg["target_lang"]):
        return
    from fairseq.data import data_utils

    src, tgt = data_utils.infer_language_pair(data)
    if src is None or tgt is None:
        raise ValueError(f"{data}: the checkpoint records no -s/-t and no train.SRC-TGT.* files name them")
    task_cfg["source_lang"], task_cfg["target_lang"] = task_cfg["source_lang"] or src, task_cfg["target_lang"] or tgt


def _card(state: dict, checkpoint: str, data: str, files: list, scores: Optional[dict]) -> dict:
    cfg = state["cfg"]
    model = state["model"]
    model_cfg = cfg["model"] if isinstance(cfg["model"], dict) else vars(cfg["model"])  # a dict or a Namespace
    return {"task": cfg["task"].get("_name"), "arch": model_cfg.get("arch") or model_cfg.get("_name"),
            "parameters": int(sum(v.numel() for v in model.values())),
            "exported_from": os.path.abspath(checkpoint), "training_data": os.path.abspath(data),
            "updates": (state.get("optimizer_history") or [{}])[-1].get("num_updates"),
            "flags": {"task": _plain(cfg["task"]), "model": _plain(cfg["model"])},
            "files": [MODEL_FILE] + files, "scores": scores or {}}


def _plain(node) -> dict:
    """The scalar settings of a saved config group (a dict, or an argparse Namespace)."""
    items = node.items() if isinstance(node, dict) else vars(node).items()
    return {k: v for k, v in items if isinstance(v, (str, int, float, bool, type(None)))}


def _export_parser(parser: str, out: str) -> dict:
    """A parser checkpoint (exported in turn) or a stanza model directory (copied) -> its card entry."""
    if os.path.isdir(parser):
        shutil.copytree(parser, out, dirs_exist_ok=True)
        return {"backend": "stanza", "path": PARSER_DIR}
    sub = export(parser, out)
    backend = {"constituency_parsing": "lal", "tree_induction": "induced"}.get(sub["task"])
    if backend is None:
        raise ValueError(f"{parser}: a {sub['task']!r} checkpoint is no parser (lal_parser or tree induction)")
    return {"backend": backend, "path": PARSER_DIR, "arch": sub["arch"]}


def _atomic_save(state: dict, path: str) -> None:
    import torch

    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


__all__ = ["MODEL_CARD", "MODEL_FILE", "PARSER_DIR", "export", "model_card", "resolve_data", "resolve_folder"]
