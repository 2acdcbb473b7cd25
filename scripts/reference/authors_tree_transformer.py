"""The authors' Tree Transformer code (yaushian/Tree-Transformer at 04d19d3) on this project's data: the smallest
data adapter, their training loop kept at a list of update counts, and their parses written for
``fairseq-tree-score``. Reference runs only: their code is read from a local copy (``--ref``, the folder holding
their solver.py) and never imported by fairseq_tree nor copied into this repository.

  train  --corpus-dir WORK/CORPUS --ref REF --out OUT --updates 1000 2000 [--layers N --d-model D --heads H
         --d-ff F] [--seed 1] [--cuda]
      their ``Solver`` (model, masked-LM loss, Adam lr 1e-4 (0.9, 0.98) eps 1e-9, clip 1.5, 64 sentences a batch,
      their masking and batch order) trained on text/train.txt with our data-bin's vocabulary; the model after
      exactly K updates kept as OUT/stage_K.pt (their model.pth format, ``{'step', 'state_dict'}``, plus the size);
      stages that exist are not written again, and nothing trains when all exist.
  parse  --ref REF --checkpoint OUT/stage_K.pt --dict WORK/CORPUS/data-bin/dict.txt --treebank X.mrg --out-trees F
      their ``test()``/``write_parse_tree`` on the treebank's sentences: [CLS] + ids padded to 60, batches of 64,
      ``get_break_prob``, ``build_tree``/``dump_tree`` from their top layer with threshold 0.8 (and their 0.7 and
      min layer 2 inside parse.py); words by the evaluation's rule (fairseq-tree-induction-text's), trees written
      one per line with the gold's spelling, as ``fairseq-tree-score --unsupervised`` reads them.

What differs from running their README (``python3 main.py -train``, then ``-test``); their files are not edited:
  1. Vocabulary: our data-bin's dict.txt in its order after their four specials ([PAD] 0, [UNK] 1, [MASK] 2,
     [CLS] 3), one id per word, a word outside it [UNK] -- instead of the first WordPiece of each word
     (bert-base-uncased) kept when seen twice. ``data_utils`` is replaced (in their solver module's namespace) by
     a subclass whose tokenizer gives each word whole; their ``make_masked_data`` and ``train_data_yielder`` run
     unchanged. Their rule "a word holding N is N" is not applied: on the recipe's text (lower-cased, a word with a
     digit already N) it changes nothing. ``transformers`` is not needed: a stand-in module is given to their
     utils.py import and never called.
  2. Text: the recipe's text/train.txt (their data/train.txt is WSJ minus 22/23); their loop never validates, so
     text/valid.txt is only passed as their -valid_path. Test sentences: a treebank's words by our evaluation's
     rule instead of their data/test.txt.
  3. Size: ``--layers/--d-model/--heads/--d-ff`` replace the fixed N=10, 512, 8, 2048 of ``Solver._make_model``
     (a subclass; their defaults without the flags). Their GroupAttention divides by a fixed 256 whatever d is.
  4. Updates: their loop runs ``num_step`` = the largest missing stage; the model after K updates is saved when
     their loop asks for batch K+1 (and after the loop for the last), with what resuming needs: their Adam's
     state (their ``train()`` keeps the optimizer in a local: their solver module is given a ``torch`` whose
     ``optim.Adam`` records the one it makes), the random states (python, numpy, torch) and the number of lines
     their batcher has read. A rerun with a stage missing resumes from the largest stage below it: weights,
     Adam, random states, and the training lines rotated to where the batcher stood (their batcher reads the
     lines in order, epoch after epoch, a batch running across an epoch's end: the rotated list gives the same
     stream), so the stages equal one uninterrupted run's on CPU. Their loop counts its steps from 0 again (its
     prints, and its own model.pth, every 1000 steps under OUT/model, are of the resumed part). A stage written
     before this (no resume state) is not resumed from (a run that needs it starts at update 0).
  5. Seeds: ``random``, ``numpy`` and ``torch`` are seeded (``--seed``); their code seeds nothing.
  6. Parse: the top layer is N-1 (their write_parse_tree's fixed 9 is N-1 for N=10); a batch is padded to 60 or
     to its longest sentence + 1 (their test truncates at 60 tokens, which leaves words of a sentence over 59
     words out of its tree); no gradients; a sentence with no word is a blank line, one word "(X w)".
Checkpoints: their format is a dict of tensors and numbers, so ``torch.load(weights_only=True)`` reads it; their
own model.pth needs no unpickling either.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from authors_structformer import fairseq_words, sentences  # noqa: E402  (our dict.txt's words; the scored words)

SPECIALS = ("[PAD]", "[UNK]", "[MASK]", "[CLS]")  # their ids 0..3 (eos_id, unk_id, mask_id, cls_id)
THEIRS = ("solver", "utils", "models", "modules", "attention", "parse", "bert_optimizer")
SIZE = ("layers", "d_model", "heads", "d_ff")
DEFAULT_SIZE = {"layers": 10, "d_model": 512, "heads": 8, "d_ff": 2048}  # Solver._make_model's


def vocabulary(words) -> dict:
    """Our words in order -> their ``new_vocab`` (word -> id), their four specials first."""
    vocab = {w: i for i, w in enumerate(SPECIALS)}
    for w in words:
        if w in vocab:
            raise SystemExit(f"vocabulary: {w!r} twice (or one of their specials)")
        vocab[w] = len(vocab)
    return vocab


class WordTokenizer:
    """BertTokenizer's ``tokenize`` for their data_utils: a word is one token."""

    def tokenize(self, word: str):
        return [word]


class Words:
    """Their ``data_utils`` state over our vocabulary (pure: no code of theirs): ``new_vocab``, ``vocab_size``,
    ``index2word``, ``training_data`` ([CLS] + one id per word, per line), ``text2id``."""

    eos_id, unk_id, mask_id, cls_id = 0, 1, 2, 3

    def __init__(self, args, words):
        self.seq_length = args.seq_length
        self.batch_size = args.batch_size
        self.no_cuda = args.no_cuda
        self.dict_path = os.path.join(args.model_dir, "dictionary.json")
        self.train_path = args.train_path
        self.tokenizer = WordTokenizer()
        self.new_vocab = vocabulary(words)
        self.vocab_size = len(self.new_vocab)
        self.index2word = list(self.new_vocab)
        if args.train:
            self.process_training_data()

    def ids(self, words):
        """[CLS] + each word's id ([UNK] outside the vocabulary)."""
        return [self.cls_id] + [self.new_vocab.get(self.tokenizer.tokenize(w)[0], self.unk_id) for w in words]

    def process_training_data(self):
        """Their ``training_data`` from ``train_path``, one line a sentence; ``dictionary.json`` written as theirs."""
        import json
        with open(self.train_path, encoding="utf-8") as f:
            self.training_data = [self.ids(line.split()) for line in f]
        Path(self.dict_path).parent.mkdir(parents=True, exist_ok=True)
        Path(self.dict_path).write_text(json.dumps(self.new_vocab), encoding="utf-8")

    def text2id(self, text: str, seq_length: int = 60):
        """Their ``text2id``: [CLS] + ids, cut at ``seq_length``, 0 ([PAD]) after."""
        import numpy as np
        vec = np.zeros([seq_length], dtype=np.int32)
        ids = self.ids(text.split())[:seq_length]
        vec[:len(ids)] = ids
        return vec


def encode(data, texts, seq_length: int = 60):
    """Their ``test()``'s inputs: ``text2id`` of each text padded to ``seq_length`` (widened to the longest + 1)
    and the mask ``expand_dims(vec != 0, -2)`` -> (int32 [B, S], int32 [B, 1, S])."""
    import numpy as np
    seq_length = max([seq_length] + [len(t.split()) + 1 for t in texts])
    vecs = np.stack([data.text2id(t, seq_length) for t in texts])
    return vecs, np.expand_dims(vecs != 0, -2).astype(np.int32)


def their_modules(ref: str) -> types.SimpleNamespace:
    """Import their solver, utils and parse modules from ``ref``; ``transformers`` stood in for while utils.py
    imports it (their tokenizer is replaced, never built)."""
    if not (Path(ref) / "solver.py").is_file() or not (Path(ref) / "parse.py").is_file():
        raise SystemExit(f"--ref {ref}: no solver.py / parse.py there (a yaushian/Tree-Transformer checkout)")
    clash = [m for m in THEIRS if m in sys.modules and not str(getattr(sys.modules[m], "__file__", "")).startswith(
        str(Path(ref).resolve()))]
    if clash:
        raise SystemExit(f"modules named {clash} are already imported from elsewhere: run in a fresh process")
    sys.path.insert(0, str(Path(ref).resolve()))
    stand_in = "transformers" not in sys.modules
    if stand_in:
        shim = types.ModuleType("transformers")

        class BertTokenizer:
            @classmethod
            def from_pretrained(cls, name, *a, **k):
                raise RuntimeError(f"no WordPiece ({name}) in a reference run: the adapter's vocabulary is used")

        shim.BertTokenizer = BertTokenizer
        sys.modules["transformers"] = shim
    try:
        mods = {m: importlib.import_module(m) for m in ("solver", "utils", "parse")}
    finally:
        if stand_in:
            del sys.modules["transformers"]
    return types.SimpleNamespace(**mods)


def adapter_class(their):
    """``Words`` on top of their ``data_utils``: our vocabulary and ids, their masking and batches, a count of the
    lines their batcher has read (``lines_read``), and a hook ``on_batch(k)`` called when their loop asks for
    batch k+1 (k updates done), before that batch is drawn."""

    class TheirWords(Words, their.utils.data_utils):
        on_batch = staticmethod(lambda k: None)
        lines_read = 0

        def make_masked_data(self, *a, **k):  # their batcher calls it once per line it reads
            self.lines_read += 1
            return super().make_masked_data(*a, **k)

        def train_data_yielder(self):
            self.on_batch(0)  # before their generator starts: a resume may rotate training_data
            batches = super().train_data_yielder()
            k = 0
            while True:
                yield next(batches)
                k += 1
                self.on_batch(k)

    return TheirWords


class _Proxy:
    """A module seen through: attributes from ``module``, except those given."""

    def __init__(self, module, **override):
        self._module = module
        self.__dict__.update(override)

    def __getattr__(self, name):
        return getattr(self._module, name)


def recording_torch(torch, made: list):
    """``torch`` for their solver module, whose ``optim.Adam`` appends each optimizer it makes to ``made``."""

    class Adam(torch.optim.Adam):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    return _Proxy(torch, optim=_Proxy(torch.optim, Adam=Adam))


def random_states() -> dict:
    """python, numpy and torch random states, as ``torch.load(weights_only=True)`` reads them back."""
    import numpy as np
    import torch
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"python": random.getstate(), "numpy": [kind, keys.tolist(), pos, has_gauss, gauss],
            "torch": torch.get_rng_state()}


def set_random_states(states: dict) -> None:
    import numpy as np
    import torch
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, pos, has_gauss, cached = states["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(states["torch"])


def resume_point(out: Path, missing, size: dict):
    """The largest stage below the first missing one that holds resume state -> (K, its checkpoint), or (0, None).
    A stage of another size is an error (a different run)."""
    import torch
    for path in sorted(out.glob("stage_*.pt"), key=lambda q: -int(q.stem.split("_")[1])):
        k = int(path.stem.split("_")[1])
        if k >= missing[0]:
            continue
        ck = torch.load(path, map_location="cpu", weights_only=True)
        if ck.get("size") != size:
            raise SystemExit(f"{path}: a model of size {ck.get('size')}, this run's is {size}: another OUT")
        if "resume" in ck:
            return k, ck
    return 0, None


def size_of(args) -> dict:
    return {k: getattr(args, k) if getattr(args, k) is not None else DEFAULT_SIZE[k] for k in SIZE}


def solver_args(out: Path, corpus: Path, num_step: int, cuda: bool) -> argparse.Namespace:
    """Their main.py's arguments (defaults: batch 64, seq_length 50) for a training run."""
    train = corpus / "text" / "train.txt"
    return argparse.Namespace(no_cuda=not cuda, model_dir=str(out / "model"), seq_length=50, batch_size=64,
                              num_step=num_step, data_dir="data_dir", load=False, train=True, test=False,
                              valid_path=str(corpus / "text" / "valid.txt"), train_path=str(train),
                              test_path=str(corpus / "text" / "valid.txt"))


def seed_all(seed: int) -> None:
    import numpy as np
    import torch
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(args) -> None:
    import torch
    out, corpus = Path(args.out), Path(args.corpus_dir)
    for src in (corpus / "text" / "train.txt", corpus / "data-bin" / "dict.txt"):
        if not src.is_file():
            raise SystemExit(f"{src}: missing (run scripts/recipes/induction_wsj.sh for this corpus first)")
    if any(u <= 0 for u in args.updates):
        raise SystemExit(f"--updates {args.updates}: update counts are positive")
    missing = sorted({u for u in args.updates if not (out / f"stage_{u}.pt").is_file()})
    if not missing:
        print(f"stages={sorted(set(args.updates))} all exist")
        return
    size = size_of(args)
    if size["layers"] < 3:
        raise SystemExit(f"--layers {size['layers']}: their parser reads layers 2 and up (min layer 2)")
    start, resume = resume_point(out, missing, size)
    if start:
        missing = [u for u in missing if u > start]
    their = their_modules(args.ref)
    words = fairseq_words(corpus / "data-bin" / "dict.txt")
    cls = adapter_class(their)
    their.solver.data_utils = lambda a: cls(a, words)  # what their Solver.__init__ builds
    made = []
    their.solver.torch = recording_torch(torch, made)  # their train()'s optimizer, for the stages

    class Solver(their.solver.Solver):
        def _make_model(self, vocab_size, N=10, **kw):
            return super()._make_model(vocab_size, size["layers"], d_model=size["d_model"], d_ff=size["d_ff"],
                                       h=size["heads"])

    seed_all(args.seed)
    solver = Solver(solver_args(out, corpus, missing[-1] - start, args.cuda))
    data = solver.data_utils

    def on_batch(k):
        if k == 0 and resume is not None:  # their model and Adam exist now; their batcher has not started
            solver.model.load_state_dict(resume["state_dict"])
            made[-1].load_state_dict(resume["resume"]["optimizer"])
            data.lines_read = resume["resume"]["lines_read"]
            p = data.lines_read % len(data.training_data)
            data.training_data = data.training_data[p:] + data.training_data[:p]
            set_random_states(resume["resume"]["rng"])
        if start + k in missing:
            path = out / f"stage_{start + k}.pt"
            state = {"optimizer": made[-1].state_dict(), "rng": random_states(), "lines_read": data.lines_read}
            torch.save({"step": start + k, "state_dict": solver.model.state_dict(), "size": size,
                        "seed": args.seed, "resume": state}, f"{path}.tmp")
            os.replace(f"{path}.tmp", path)

    data.on_batch = on_batch
    solver.train()
    on_batch(missing[-1] - start)
    print(f"stages={missing} trained_to={missing[-1]} size={size}" + (f" resumed_from={start}" if start else ""))


def bracket(tree, words) -> str:
    """Their ``dump_tree`` nltk tree over word indices (a word is a childless tree labelled by its index) ->
    "(X (X a b) c)" with bare words ``words[index]``; a one-child node is its child."""
    if len(tree) == 0:
        return words[int(tree.label())]
    kids = [bracket(c, words) for c in tree]
    return kids[0] if len(kids) == 1 else "(X " + " ".join(kids) + ")"


def parse(args) -> None:
    import torch
    their = their_modules(args.ref)
    ck = torch.load(args.checkpoint, map_location="cpu", weights_only=True)
    size = ck.get("size", DEFAULT_SIZE)  # their own model.pth holds no size: theirs
    words = fairseq_words(Path(args.dict))
    data = Words(argparse.Namespace(seq_length=50, batch_size=64, no_cuda=not args.cuda, model_dir="",
                                    train_path=None, train=False), words)
    rows = ck["state_dict"]["proj.weight"].shape[0]
    if rows != data.vocab_size:
        raise SystemExit(f"{args.checkpoint}: a vocabulary of {rows}, {args.dict} gives {data.vocab_size}")
    model = their.solver.Solver._make_model(types.SimpleNamespace(no_cuda=not args.cuda), data.vocab_size,
                                            size["layers"], d_model=size["d_model"], d_ff=size["d_ff"],
                                            h=size["heads"])
    model.load_state_dict(ck["state_dict"])
    model.eval()
    sents = sentences(args.treebank)
    trees = []
    with torch.no_grad():
        for b in range(0, len(sents), args.batch_size):
            batch = sents[b:b + args.batch_size]
            texts = [" ".join(w) for w, _ in batch]
            vecs, masks = encode(data, texts)
            _, break_probs = model.forward(their.utils.cc(vecs, no_cuda=not args.cuda).long(),
                                           their.utils.cc(masks, no_cuda=not args.cuda))
            for i, (w, raw) in enumerate(batch):
                trees.append(tree_line(their.parse, break_probs[i], len(w), raw, args.threshold))
    Path(args.out_trees).write_text("\n".join(trees) + "\n", encoding="utf-8")
    print(f"sentences={len(trees)} trees={args.out_trees}")


def tree_line(their_parse, break_probs, length: int, raw, threshold: float) -> str:
    """One sentence's tree as their write_parse_tree makes it from its [layers, S, S] ``break_probs`` (links
    between words, [CLS]'s dropped; from the top layer, their 9 for 10 layers), written with the gold's words."""
    if length == 0:
        return ""
    bp = their_parse.get_break_prob(break_probs)[:, 1:length]
    top = bp.shape[0] - 1
    t = bracket(their_parse.dump_tree(bp, top, 0, length - 1, [str(i) for i in range(length)], threshold), raw)
    return t if t.startswith("(") else f"(X {t})"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("train")
    for name in ("--corpus-dir", "--ref", "--out"):
        a.add_argument(name, required=True)
    a.add_argument("--updates", type=int, nargs="+", required=True)
    a.add_argument("--layers", type=int)
    a.add_argument("--d-model", type=int)
    a.add_argument("--heads", type=int)
    a.add_argument("--d-ff", type=int)
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--cuda", action="store_true")
    b = sub.add_parser("parse")
    for name in ("--ref", "--checkpoint", "--dict", "--treebank", "--out-trees"):
        b.add_argument(name, required=True)
    b.add_argument("--threshold", type=float, default=0.8, help="their test()'s")
    b.add_argument("--batch-size", type=int, default=64)
    b.add_argument("--cuda", action="store_true")
    args = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    train(args) if args.cmd == "train" else parse(args)


if __name__ == "__main__":
    main()
