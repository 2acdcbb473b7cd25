"""Scores of translation runs from the files fairseq writes (no model runs here): a ``fairseq-generate`` log's
hypotheses, references and BLEU line, sacreBLEU on detokenized output, sacreBLEU's paired bootstrap between two
systems, a ``fairseq-train`` log's summary (updates, epochs, wall time, validation losses), every metric of its
validations (:func:`validations`), and where one uninterrupted ``--patience`` run would have stopped
(:func:`patience_stop`)."""

import re
import statistics
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple


class RunError(ValueError):
    """A run's file is missing or not what fairseq writes; the message names it."""


def _text(path: Path, errors: str = "strict") -> str:
    if not Path(path).is_file():
        raise RunError(f"{path}: missing (the run has not finished, or its generation failed)")
    return Path(path).read_text(encoding="utf-8", errors=errors)


def generate_lines(gen: Path, kind: str) -> List[str]:
    """The ``kind`` lines (``H``: tokenized hypotheses, BPE removed with --remove-bpe; ``D``: detokenized; ``T``:
    references; ``S``: sources) of a fairseq-generate log, in sentence-id order (the text only)."""
    out: Dict[int, str] = {}
    for line in _text(gen).splitlines():
        if line.startswith(kind + "-"):
            fields = line[len(kind) + 1:].split("\t")
            out[int(fields[0])] = fields[-1] if kind in ("H", "D") else "\t".join(fields[1:])
    if not out:
        raise RunError(f"{gen}: no {kind}- lines")
    if sorted(out) != list(range(len(out))):
        raise RunError(f"{gen}: {kind}- lines for {len(out)} sentences, not ids 0..{len(out) - 1}")
    return [out[i] for i in range(len(out))]


def fairseq_bleu(gen: Path) -> float:
    """fairseq-generate's own corpus BLEU4 (``--scoring bleu``, the default: on the tokenized text) or the
    sacreBLEU score it prints (``--scoring sacrebleu``)."""
    m = re.search(r"BLEU4? = ([\d.]+)", _text(gen))
    if not m:
        raise RunError(f"{gen}: no 'BLEU = ' line (nor fairseq's 'BLEU4 = '; generation failed or was cut)")
    return float(m.group(1))


def detokenize(lines: Sequence[str], lang: str) -> List[str]:
    """Moses detokenization (sacremoses) of tokenized lines, as the references were before tokenization."""
    from sacremoses import MosesDetokenizer

    detok = MosesDetokenizer(lang=lang)
    return [detok.detokenize(line.split()) for line in lines]


def sacrebleu_score(hyps: Sequence[str], refs: Sequence[str], lowercase: bool = False) -> Tuple[float, str]:
    """-> (BLEU, sacreBLEU's signature) of detokenized hypotheses against raw references."""
    from sacrebleu.metrics import BLEU

    if len(hyps) != len(refs):
        raise RunError(f"{len(hyps)} hypotheses for {len(refs)} references")
    metric = BLEU(lowercase=lowercase)
    return metric.corpus_score(list(hyps), [list(refs)]).score, str(metric.get_signature())


def paired_p(base: Sequence[str], system: Sequence[str], refs: Sequence[str], samples: int = 1000,
             lowercase: bool = False) -> float:
    """p-value of the BLEU difference of two systems on the same references by sacreBLEU's paired bootstrap
    resampling (Koehn, 2004; ``sacrebleu --paired-bs``, its fixed seed 12345)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    _, scores = PairedTest([("baseline", list(base)), ("system", list(system))], {"BLEU": BLEU(lowercase=lowercase)},
                           [list(refs)], test_type="bs", n_samples=samples)()
    return scores["BLEU"][1].p_value


class Training(NamedTuple):
    updates: int
    epochs: int
    minutes: float
    device: str
    valid_losses: List[float]  # one per validation, in order
    sentences_per_update: Optional[float]  # mean of the epoch summaries' bsz


def segments_seconds(walls: Sequence[float]) -> float:
    """The sum over run segments of each segment's last wall-meter reading; a segment ends where the meter falls
    (a resume that restarted it), e.g. [400, 100, 200] -> 400 + 200 (the time between a killed segment's last
    log line and its end is not in the log)."""
    total = last = 0.0
    for w in walls:
        if w < last:
            total += last
        last = w
    return total + last


def devices(text: str) -> str:
    """The devices of a log's segments in order of first use, from each fairseq-train start's config ('cpu': True
    or False): 'cpu', 'gpu', or e.g. 'gpu+cpu' for a run begun on a GPU and resumed on a CPU."""
    seen = ["cpu" if v == "True" else "gpu" for v in re.findall(r"'cpu': (True|False)", text)]
    if not seen:  # fairseq < 0.10 logged a Namespace
        seen = ["cpu" if "--cpu" in text or "cpu=True" in text else "gpu"]
    return "+".join(dict.fromkeys(seen))


def training(log: Path) -> Training:
    """A fairseq-train log (resumed runs append to it) -> its :class:`Training` summary."""
    text = _text(log)
    updates = re.findall(r"num_updates[= ](\d+)", text)
    epochs = re.findall(r"\| epoch (\d+)", text)
    wall = re.findall(r"(?<!\w)wall[= ]([\d.]+)", text)  # not train_wall
    done = re.findall(r"done training in ([\d.]+) seconds", text)
    device = devices(text)
    # a segment that ends by itself logs "done training"; fairseq's wall meter continues across a resume from its
    # checkpoint, but restarts after a killed one: a segment ends where the meter falls
    seconds = max(sum(float(d) for d in done), segments_seconds([float(w) for w in wall]))
    valid = [float(v) for v in re.findall(r"valid on 'valid' subset \| loss ([\d.]+)", text)]
    bsz = re.findall(r"\| train \| epoch \d+ \|.*?\| bsz ([\d.]+) \|", text)  # the epoch summaries
    return Training(int(updates[-1]) if updates else 0, int(epochs[-1]) if epochs else 0,
                    seconds / 60 if done or wall else float("nan"), device, valid,
                    statistics.mean(float(b) for b in bsz) if bsz else None)


_SAVED = re.compile(r"Saved checkpoint \S+ \(epoch (\d+) @ (\d+) updates, score ([^)]+)\)")
_VALID = re.compile(r"valid on 'valid' subset \| (.*)$")
_METRIC = re.compile(r"(\w+) (-?[\d.]+(?:e[-+]?\d+)?|nan|inf)$")


def validations(log: Path) -> Dict[int, Dict[str, float]]:
    """Every metric of each ``valid on 'valid' subset | NAME VALUE | ...`` line of a fairseq-train log (simple
    log format), keyed by its ``num_updates``: ``{updates: {name: value}}``. A resumed run's log may repeat an
    update (a validation whose save a kill interrupted is redone): the later line wins."""
    out: Dict[int, Dict[str, float]] = {}
    for line in _text(log, errors="replace").splitlines():  # a killed write may leave broken bytes
        m = _VALID.search(line)
        if not m:
            continue
        metrics = {}
        for field in m.group(1).split(" | "):
            kv = _METRIC.match(field.strip())
            if kv:
                metrics[kv.group(1)] = float(kv.group(2))
        if "num_updates" in metrics:
            out[int(metrics.pop("num_updates"))] = metrics
    return out


class Stop(NamedTuple):
    epoch: int
    updates: int


def saved_scores(log: Path) -> List[Tuple[Stop, float]]:
    """The validations whose checkpoints were saved, in order of updates: ``[(Stop(epoch, updates), score)]`` from
    fairseq's ``Saved checkpoint PATH (epoch E @ U updates, score S)`` lines (S: the ``--best-checkpoint-metric``
    fairseq compared). A validation whose save a kill interrupted is redone after the resume: the later line of the
    same update count wins. Saves without a validation (``score None``) are left out."""
    scores: Dict[int, Tuple[Stop, float]] = {}
    for epoch, updates, score in _SAVED.findall(_text(log)):
        if score != "None":
            scores[int(updates)] = (Stop(int(epoch), int(updates)), float(score))
    return [scores[u] for u in sorted(scores)]


def patience_stop(log: Path, patience: int, maximize: bool = False) -> Optional[Stop]:
    """Where one uninterrupted ``fairseq-train --patience P`` run stops: the saved validation that ended it, or None
    while it would go on. fairseq keeps its count of validations without improvement in attributes of a function
    (``fairseq_cli.train.should_stop_early``), not in the checkpoint: a resumed run counts afresh from its first
    validation as the best, so it trains on past this point (and ``--keep-last-epochs`` then deletes the epochs an
    average of the last ones needs). This replays fairseq's rule (strictly better resets the count; the stop is the
    P-th validation in a row that is not) over :func:`saved_scores` (fairseq saves the stopping validation's
    checkpoint before it stops)."""
    if patience <= 0:
        return None
    best, runs = None, 0
    for stop, score in saved_scores(log):
        if best is None or (score > best if maximize else score < best):
            best, runs = score, 0
        else:
            runs += 1
            if runs >= patience:
                return stop
    return None


def mean_sd(values: Sequence[float], signed: bool = False) -> str:
    """'mean ± sample sd', two decimals ('value (one seed)' for one value); ``signed``: '+' on positive means."""
    mean = f"{statistics.mean(values):{'+' if signed else ''}.2f}"
    return f"{mean} ± {statistics.stdev(values):.2f}" if len(values) > 1 else f"{mean} (one seed)"


__all__ = ["RunError", "Training", "detokenize", "fairseq_bleu", "generate_lines", "mean_sd", "paired_p",
           "patience_stop", "sacrebleu_score", "saved_scores", "Stop", "segments_seconds", "training",
           "validations"]
