"""The data steps and the result table of the paper recipes (scripts/recipes/papers/*.sh): each subcommand reads a
source in its published layout and writes aligned one-line-per-sentence files, or checks what a step wrote.

    papers.py fetch URL_OR_PATH DEST             download (http, https, file://) or copy, once, atomically
    papers.py extract ARCHIVE DIR                unpack a .tgz/.tar.gz/.zip/.gz (no member outside DIR)
    papers.py iwslt ORIG OUT --pair de-en --src de --tgt en --valid from-train|SET --test SET[,SET..]
    papers.py wmt ORIG OUT --src en --tgt de     Europarl v7 + CommonCrawl + News Commentary v12, newstest2014
    papers.py tokenize RAW TOK --src en --tgt de [--max-len 175 --ratio 1.5 --valid-every 23]
    papers.py trivial-trees TOK TREES --src en   right-branching trees over the tokens (a control; tests)
    papers.py lowercase TOK TREES OUT_TOK OUT_TREES --src en --tgt de
    papers.py seq-databin TREE_BIN SEQ_BIN --src en --tgt de    the Transformer's data-bin from the tree one
    papers.py imdb ACLIMDB OUT                   documents -> sentences (+ the document of each), labels
    papers.py imdb-join SENTS TREES OUT          each document's sentence trees on one line (one dummy root)
    papers.py sva TSV OUT                        Linzen et al. 2016: the words before the verb, its number
    papers.py ptb-layout PTB DEPS OUT --train 02-21|all   WSJ sections as induction_wsj.sh's data layout
    papers.py accuracy LOG                       fairseq-validate's test accuracy as JSON
    papers.py table NAME WORK                    the paper's rows beside ours (Markdown)

A bad input stops the step with FILE:LINE and the reason; every dropped line is counted in the step's JSON
report. Nothing here trains or scores a model: the recipes call the project's CLIs for that.
"""

import argparse
import gzip
import importlib.util
import json
import re
import shutil
import sys
import tarfile
import urllib.request
import zipfile
from pathlib import Path

SPLITS = ("train", "valid", "test")
REPO = Path(__file__).resolve().parents[3]


def pipeline_tokenize():
    """fairseq_tree/text/tokenize.py, the module fairseq-tree-preprocess tokenizes with, loaded from its file: it
    needs only sacremoses, and importing the package would import fairseq (5 CPU-seconds a step)."""
    spec = importlib.util.spec_from_file_location("fairseq_tree_text_tokenize",
                                                  REPO / "fairseq_tree" / "text" / "tokenize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class StepError(Exception):
    """A bad input or a misaligned output: the message names the file (and line)."""


def write_lines(path: Path, lines) -> int:
    """Write ``lines`` (one per line) atomically -> how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
            n += 1
    tmp.replace(path)
    return n


def read_lines(path: Path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def check_aligned(files) -> int:
    """All ``files`` have the same number of lines -> that number; else StepError naming each count."""
    counts = {str(f): len(read_lines(f)) for f in files}
    if len(set(counts.values())) != 1:
        raise StepError("misaligned: " + ", ".join(f"{f} has {n} lines" for f, n in counts.items()))
    return next(iter(counts.values()))


# ------------------------------------------------------------------------------------------------ fetch, extract

def fetch(source: str, dest: Path) -> None:
    """``source``: an http(s):// or file:// URL, or a local path; ``dest`` is written once (a .part renamed)."""
    if dest.is_file():
        print(f"{dest}: already there")
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    if re.match(r"^(https?|file)://", source):
        with urllib.request.urlopen(source) as r, open(part, "wb") as f:  # noqa: S310 (the recipe's own URLs)
            shutil.copyfileobj(r, f)
    else:
        shutil.copyfile(source, part)
    part.replace(dest)
    print(f"{dest}: {dest.stat().st_size} bytes from {source}")


def safe_member(root: Path, name: str) -> Path:
    target = (root / name).resolve()
    if root.resolve() not in target.parents and target != root.resolve():
        raise StepError(f"archive member {name!r} would be written outside {root}")
    return target


def extract(archive: Path, out: Path) -> None:
    """Unpack ``archive`` (tar, tgz, zip, or one .gz file) into ``out``; a stamp marks it done."""
    stamp = out / f".{archive.name}.extracted"
    if stamp.is_file():
        return
    out.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                safe_member(out, name)
            z.extractall(out)
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                safe_member(out, m.name)
                if not (m.isfile() or m.isdir()):
                    raise StepError(f"{archive}: member {m.name} is neither a file nor a folder")
            t.extractall(out)  # every member checked above
    elif archive.suffix == ".gz":
        with gzip.open(archive, "rb") as fin, open(out / archive.stem, "wb") as fout:
            shutil.copyfileobj(fin, fout)
    else:
        raise StepError(f"{archive}: not a tar, zip or gzip archive")
    stamp.touch()


# ------------------------------------------------------------------------------------------------ translation text

#: metadata lines of a ``train.tags`` file: those fairseq's prepare-iwslt14.sh drops (its 2014 release), and those
#: of the later releases (prepare-iwslt17-multilingual.sh drops them too)
META_2014 = ("<url>", "<talkid>", "<keywords>")
META_LATER = META_2014 + ("<speaker>", "<reviewer", "<translator", "<doc ", "</doc>")
SEG = re.compile(r"<seg id=\"?\d+\"?>\s*(.*?)\s*</seg>")


def iwslt_train(path: Path, meta):
    """The talks' text of a ``train.tags.PAIR.L`` file: the ``meta`` lines dropped, title/description tags
    stripped (as fairseq's prepare-iwslt14.sh)."""
    for line in read_lines(path):
        if line.lstrip().startswith(meta):
            continue
        yield re.sub(r"</?(title|description)>", "", line).strip()


def segments(path: Path):
    """The ``<seg id="N">`` texts of an XML or SGM file, in file order (curly apostrophes straightened, as
    fairseq's prepare scripts do)."""
    out = []
    for lineno, line in enumerate(read_lines(path), 1):
        if "<seg" in line:
            m = SEG.search(line)
            if not m:
                raise StepError(f"{path}:{lineno}: a <seg> line without its </seg>")
            out.append(m.group(1).replace("\u2019", "'"))
    if not out:
        raise StepError(f"{path}: no <seg id=...> line")
    return out


def find_one(root: Path, pattern: str) -> Path:
    hits = sorted(root.rglob(pattern))
    if len(hits) != 1:
        raise StepError(f"{root}: {len(hits)} files match {pattern} (want exactly one): "
                        f"{[str(h) for h in hits[:5]]}")
    return hits[0]


def write_pair(out: Path, split: str, src: str, tgt: str, pairs) -> int:
    pairs = list(pairs)
    write_lines(out / f"{split}.{src}", (s for s, _ in pairs))
    return write_lines(out / f"{split}.{tgt}", (t for _, t in pairs))


def iwslt(args) -> dict:
    """IWSLT's TED archive (``PAIR/train.tags.PAIR.L``, ``PAIR/IWSLT*.TED*.SET.PAIR.L.xml``) -> raw splits."""
    orig, out, src, tgt, pair = Path(args.orig), Path(args.out), args.src, args.tgt, args.pair
    train = {}
    for lang in (src, tgt):
        train[lang] = list(iwslt_train(find_one(orig, f"train.tags.{pair}.{lang}"),
                                       META_2014 if args.meta == "2014" else META_LATER))
    if len(train[src]) != len(train[tgt]):
        raise StepError(f"{orig}: train.tags.{pair}.{src} has {len(train[src])} text lines, "
                        f".{tgt} has {len(train[tgt])}")
    rows = list(zip(train[src], train[tgt]))

    def xml_set(name):
        sides = [segments(find_one(orig, f"*.{name}.{pair}.{lang}.xml")) for lang in (src, tgt)]
        if len(sides[0]) != len(sides[1]):
            raise StepError(f"{orig}: {name}: {len(sides[0])} {src} segments against {len(sides[1])} {tgt}")
        return list(zip(*sides))

    counts = {}
    if args.valid != "from-train":  # else: held out of the cleaned training pairs (tokenize --valid-every)
        counts["valid"] = write_pair(out, "valid", src, tgt, xml_set(args.valid))
    counts["train"] = write_pair(out, "train", src, tgt, rows)
    counts["test"] = write_pair(out, "test", src, tgt, (r for name in args.test.split(",") for r in xml_set(name)))
    return counts


WMT_CORPORA = ("europarl-v7.de-en", "commoncrawl.de-en", "news-commentary-v12.de-en")


def wmt(args) -> dict:
    """WMT'14 En-De as fairseq's prepare-wmt14en2de.sh: the three corpora (punctuation normalised, non-printing
    characters removed) as train, newstest2014 (``test-full/*.sgm``) as test; the validation pairs are held out of
    the cleaned training pairs (tokenize --valid-every 100)."""
    from sacremoses import MosesPunctNormalizer

    orig, out, src, tgt = Path(args.orig), Path(args.out), args.src, args.tgt
    norm = {lang: MosesPunctNormalizer(lang=lang) for lang in (src, tgt)}
    nonprint = re.compile(r"[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200b-\u200f\ufeff]")

    def clean(lang, text):
        return nonprint.sub("", norm[lang].normalize(text)).strip()

    rows = []
    for corpus in WMT_CORPORA:
        sides = [read_lines(find_one(orig, f"{corpus}.{lang}")) for lang in (src, tgt)]
        if len(sides[0]) != len(sides[1]):
            raise StepError(f"{orig}: {corpus}.{src} has {len(sides[0])} lines, .{tgt} has {len(sides[1])}")
        rows += [(clean(src, s), clean(tgt, t)) for s, t in zip(*sides)]
    test = [segments(find_one(orig, f"newstest2014-deen-{kind}.{lang}.sgm"))
            for kind, lang in (("src" if src == "en" else "ref", "en"), ("ref" if src == "en" else "src", "de"))]
    if src != "en":
        test.reverse()
    counts = {"train": write_pair(out, "train", src, tgt, rows)}
    if len(test[0]) != len(test[1]):
        raise StepError(f"{orig}: newstest2014 has {len(test[0])} {src} segments and {len(test[1])} {tgt}")
    counts["test"] = write_pair(out, "test", src, tgt, zip(*test))
    return counts


def tokenize(args) -> dict:
    """Tokenize both sides as ``fairseq-tree-preprocess --tokenize moses`` does (the source in PTB conventions);
    training pairs that are empty, hold a bad character, exceed --max-len tokens or a length ratio of --ratio
    are dropped and counted (fairseq's clean-corpus-n); a bad valid or test line stops the step. With
    --valid-every N, every Nth cleaned training pair is the validation set (fairseq's prepare-iwslt14.sh cleans,
    then holds out every 23rd line)."""
    t = pipeline_tokenize()
    InputError, Tokenizer, check_line = t.InputError, t.Tokenizer, t.check_line
    raw, tok, src, tgt = Path(args.raw), Path(args.tok), args.src, args.tgt
    toks = {src: Tokenizer("moses", src, ptb=True), tgt: Tokenizer("moses", tgt)}
    report, kept = {}, {}
    splits = [s for s in SPLITS if (raw / f"{s}.{src}").is_file() or s != "valid"]
    if args.valid_every and "valid" in splits:
        raise StepError(f"{raw / f'valid.{src}'}: a validation set, and --valid-every {args.valid_every}: one only")
    for split in splits:
        n = check_aligned([raw / f"{split}.{src}", raw / f"{split}.{tgt}"])
        sides = {lang: read_lines(raw / f"{split}.{lang}") for lang in (src, tgt)}
        keep, dropped = [], {}
        for i in range(n):
            try:
                pair = [toks[lang](check_line(sides[lang][i])) for lang in (src, tgt)]
            except InputError as e:
                if split != "train":
                    raise StepError(f"{raw / f'{split}.{src}'}:{i + 1}: {e.message}") from None
                dropped[e.reason] = dropped.get(e.reason, 0) + 1
                continue
            a, b = len(pair[0]), len(pair[1])
            if split == "train" and (max(a, b) > args.max_len or max(a, b) > args.ratio * min(a, b)):
                key = "too_long" if max(a, b) > args.max_len else "length_ratio"
                dropped[key] = dropped.get(key, 0) + 1
                continue
            keep.append(pair)
        kept[split] = keep
        report[split] = {"lines": n, "kept": len(keep), "dropped": dropped}
    if args.valid_every:
        train, every = kept["train"], args.valid_every
        kept["train"] = [p for i, p in enumerate(train, 1) if i % every]
        kept["valid"] = [p for i, p in enumerate(train, 1) if i % every == 0]
        report["valid"] = {"held_out_of_train": f"every {every}th cleaned pair", "kept": len(kept["valid"])}
    for split, keep in kept.items():
        for j, lang in enumerate((src, tgt)):
            write_lines(tok / f"{split}.{lang}", (" ".join(p[j]) for p in keep))
    # the references of sacreBLEU: the raw test target, line for line with the tokenized test set
    shutil.copyfile(raw / f"test.{tgt}", tok / f"test.raw.{tgt}")
    (tok / "tokenize.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return report


def bracket_leaf(word: str) -> str:
    return word.replace("(", "-LRB-").replace(")", "-RRB-")


def right_branching(words) -> str:
    """``(X (X w1) (X (X w2) ... (X wn)))``: each word's preterminal ``X``, each suffix of two words or more a node:
    the trees of fairseq-tree-trivial-trees --shape right, written directly (no fairseq import)."""
    out = f"(X {bracket_leaf(words[-1])})"
    for w in reversed(words[:-1]):
        out = f"(X (X {bracket_leaf(w)}) {out})"
    return out


def trivial_trees(args) -> dict:
    """Right-branching trees over each tokenized source line: tree2seq's no-syntax control, and the parse step of
    the tests (no parser model needed). An empty line stays empty."""
    counts = {}
    for split in SPLITS:
        lines = read_lines(Path(args.tok) / f"{split}.{args.src}")
        counts[split] = write_lines(Path(args.trees) / f"{split}.{args.src}.trees",
                                    (right_branching(line.split()) if line.split() else "" for line in lines))
    return counts


ESCAPES = re.compile(r"^-[LR][RCS]B-$")
LEAF = re.compile(r"\(([^\s()]+) ([^\s()]+)\)")


def lower_leaves(tree: str) -> str:
    return LEAF.sub(lambda m: f"({m[1]} {m[2] if ESCAPES.match(m[2]) else m[2].lower()})", tree)


def lowercase(args) -> dict:
    """Lowercase the tokenized text (both sides) and the words of the source trees (tags and PTB bracket
    escapes kept): parsed cased, trained lowercased, as fairseq's prepare-iwslt14.sh lowercases."""
    tok, trees, otok, otrees, src, tgt = map(Path, (args.tok, args.trees, args.out_tok, args.out_trees,
                                                  args.src, args.tgt))
    counts = {}
    for split in SPLITS:
        n = check_aligned([tok / f"{split}.{src}", tok / f"{split}.{tgt}", trees / f"{split}.{src}.trees"])
        for lang in (src, tgt):
            write_lines(otok / f"{split}.{lang}", (s.lower() for s in read_lines(tok / f"{split}.{lang}")))
        write_lines(otrees / f"{split}.{src}.trees", map(lower_leaves, read_lines(trees / f"{split}.{src}.trees")))
        counts[split] = n
    ref = tok / f"test.raw.{tgt}"
    shutil.copyfile(ref, otok / ref.name)
    return counts


def seq_databin(args) -> dict:
    """The Transformer baseline's data-bin, made from the tree data-bin so both read the same sentences, BPE and
    dictionary: each source is the tree's leaves + EOS (fairseq-preprocess's source), the targets and dictionaries
    are the tree data-bin's own files. Checked item by item."""
    import torch
    from fairseq.data import Dictionary, data_utils, indexed_dataset

    tree, seq, src, tgt = Path(args.tree_bin), Path(args.seq_bin), args.src, args.tgt
    seq.mkdir(parents=True, exist_ok=True)
    src_dict = Dictionary.load(str(tree / f"dict.{src}.txt"))
    for name in (f"dict.{src}.txt", f"dict.{tgt}.txt"):
        shutil.copyfile(tree / name, seq / name)
    counts = {}
    for split in SPLITS:
        prefix = f"{split}.{src}-{tgt}"
        leaves = data_utils.load_indexed_dataset(str(tree / f"{prefix}.{src}"), None, "mmap")
        targets = data_utils.load_indexed_dataset(str(tree / f"{prefix}.{tgt}"), None, "mmap")
        if leaves is None or targets is None or len(leaves) != len(targets):
            raise StepError(f"{tree}: {prefix}: source and target datasets missing or of different lengths")
        out = seq / f"{prefix}.{src}"
        builder = indexed_dataset.make_builder(str(out) + ".bin", impl="mmap", vocab_size=len(src_dict))
        for i in range(len(leaves)):
            builder.add_item(torch.cat([leaves[i], torch.tensor([src_dict.eos()], dtype=leaves[i].dtype)]))
        builder.finalize(str(out) + ".idx")
        for ext in ("bin", "idx"):
            shutil.copyfile(tree / f"{prefix}.{tgt}.{ext}", seq / f"{prefix}.{tgt}.{ext}")
        back = data_utils.load_indexed_dataset(str(out), None, "mmap")
        bad = [i for i in range(len(leaves)) if back[i][:-1].tolist() != leaves[i].tolist()]
        if len(back) != len(leaves) or bad:
            raise StepError(f"{out}: {len(bad)} sources differ from the tree leaves, the first: {bad[:5]}")
        counts[split] = len(back)
    return counts


# ------------------------------------------------------------------------------------------------ classification

SENT_END = {".", "!", "?", "...", ".."}


def split_sentences(tokens):
    """Tokens -> sentences: a break after ``. ! ?`` (closing quotes and brackets stay with it) when the next
    token starts with a capital, a digit or an opening quote (a rule splitter, not CoreNLP's)."""
    out, cur = [], []
    for i, tok in enumerate(tokens):
        cur.append(tok)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        ends = tok in SENT_END or (tok in ("''", "'", ")", "-RRB-") and len(cur) > 1 and cur[-2] in SENT_END)
        if ends and (nxt is None or nxt[:1].isupper() or nxt[:1].isdigit() or nxt in ("``", "(")):
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def imdb(args) -> dict:
    """aclImdb/{train,test}/{pos,neg}/ID_RATING.txt -> OUT/sents/{split}.en (one tokenized sentence a line),
    OUT/sents/{split}.doc (its document's number), OUT/docs/{split}.label; every --valid-every'th training
    document (in file order) is the validation set (the paper names none)."""
    t = pipeline_tokenize()
    root, out = Path(args.aclimdb), Path(args.out)
    tok, check_line = t.Tokenizer("moses", "en", ptb=True), t.check_line
    docs = {}
    for part in ("train", "test"):
        files = [(label, p) for label in ("neg", "pos")
                 for p in sorted((root / part / label).glob("*.txt"), key=lambda p: int(p.stem.split("_")[0]))]
        if not files:
            raise StepError(f"{root / part}: no neg/*.txt or pos/*.txt")
        if part == "train":
            docs["valid"] = [f for i, f in enumerate(files, 1) if i % args.valid_every == 0]
            docs["train"] = [f for i, f in enumerate(files, 1) if i % args.valid_every != 0]
        else:
            docs["test"] = files
    counts = {}
    for split in SPLITS:
        sents, index = [], []
        for d, (_, path) in enumerate(docs[split]):
            text = re.sub(r"<br\s*/?>", " ", path.read_text(encoding="utf-8"))
            try:
                words = tok(check_line(" ".join(text.split())))
            except ValueError as e:
                raise StepError(f"{path}: {e}") from None
            for s in split_sentences(words):
                sents.append(" ".join(s))
                index.append(str(d))
        write_lines(out / "sents" / f"{split}.en", sents)
        write_lines(out / "sents" / f"{split}.doc", index)
        write_lines(out / "docs" / f"{split}.label", (label for label, _ in docs[split]))
        counts[split] = {"documents": len(docs[split]), "sentences": len(sents)}
    return counts


def imdb_join(args) -> dict:
    """Each document on one line: OUT/{split}.en its sentences' words, OUT/{split}.en.trees their trees (several
    trees on a line go under one ``ROOT`` node: the paper's dummy root). A sentence the parser skipped (an empty
    tree line) is left out of both and counted; a document left with no tree stops the step."""
    sents, trees, out = Path(args.sents), Path(args.trees), Path(args.out)
    report = {}
    for split in SPLITS:
        index, text = read_lines(sents / f"{split}.doc"), read_lines(sents / f"{split}.en")
        lines = read_lines(trees / f"{split}.en.trees")
        if not len(index) == len(text) == len(lines):
            raise StepError(f"misaligned: {sents / f'{split}.doc'} has {len(index)} lines, {sents / f'{split}.en'} "
                            f"{len(text)}, {trees / f'{split}.en.trees'} {len(lines)}")
        labels = read_lines(out / f"{split}.label")
        docs = [([], []) for _ in labels]
        missing = 0
        for d, words, tree in zip(index, text, lines):
            if tree.strip():
                docs[int(d)][0].append(words)
                docs[int(d)][1].append(tree.strip())
            else:
                missing += 1
        empty = [i for i, (words, _) in enumerate(docs) if not words]
        if empty:
            raise StepError(f"{trees / f'{split}.en.trees'}: documents {empty[:5]} have no parsed sentence")
        write_lines(out / f"{split}.en", (" ".join(words) for words, _ in docs))
        write_lines(out / f"{split}.en.trees", (" ".join(ts) for _, ts in docs))
        report[split] = {"documents": len(docs), "sentences_without_tree": missing}
    return report


ACCURACY = re.compile(r"\| (?:valid on )?'?test'?(?: subset)? \|.*?\| accuracy ([\d.]+)")


def accuracy(log: Path) -> dict:
    """fairseq-validate's last line for the test subset -> {"accuracy": %} (the tree_classification criterion's
    sentence accuracy)."""
    hits = [m.group(1) for line in read_lines(log) for m in [ACCURACY.search(line)] if m]
    if not hits:
        raise StepError(f"{log}: no 'test' subset line with an accuracy (fairseq-validate's output)")
    return {"accuracy": float(hits[-1])}


SVA_FIELDS = 18  # Linzen et al.'s agr_50_mostcommon_10K.tsv: sentence, orig_sentence, pos_sentence, ... (a header)


def sva(args) -> dict:
    """Linzen et al. (2016)'s number prediction: the words of ``orig_sentence`` before the verb
    (``verb_index``, 1-based) and the verb's number (``verb_pos``: VBZ singular, VBP plural); lines i % 100 < 9
    train, == 9 valid, the rest test (their 9% / 1% / 90%)."""
    tsv, out = Path(args.tsv), Path(args.out)
    with open(tsv, encoding="utf-8") as f:
        header = f.readline().rstrip("\n").split("\t")
        if len(header) != SVA_FIELDS or "verb_index" not in header or "orig_sentence" not in header:
            raise StepError(f"{tsv}:1: not the agr_50_mostcommon_10K.tsv header ({len(header)} fields)")
        col = {name: i for i, name in enumerate(header)}
        rows = {s: [] for s in SPLITS}
        dropped = 0
        for lineno, line in enumerate(f, 2):
            cols = line.rstrip("\n").split("\t")
            if len(cols) != SVA_FIELDS:
                raise StepError(f"{tsv}:{lineno}: {len(cols)} fields, want {SVA_FIELDS}")
            words, verb, number = cols[col["orig_sentence"]].split(), int(cols[col["verb_index"]]), \
                cols[col["verb_pos"]]
            if number not in ("VBZ", "VBP") or not 1 <= verb <= len(words):
                raise StepError(f"{tsv}:{lineno}: verb_pos {number!r}, verb_index {verb} of {len(words)} words")
            if verb == 1:  # no word before the verb: nothing to read
                dropped += 1
                continue
            i = lineno - 2
            split = "train" if i % 100 < 9 else "valid" if i % 100 == 9 else "test"
            rows[split].append((" ".join(words[:verb - 1]), number))
    counts = {"dropped_verb_first": dropped}
    for split in SPLITS:
        write_lines(out / f"{split}.en", (w for w, _ in rows[split]))
        counts[split] = write_lines(out / f"{split}.label", (n for _, n in rows[split]))
    return counts


# ------------------------------------------------------------------------------------------------ treebanks

def mrg_trees(path: Path):
    """The trees of an LDC .mrg file (several lines each), one string per tree, whitespace collapsed."""
    text, depth, start, out = path.read_text(encoding="utf-8"), 0, None, []
    for i, ch in enumerate(text):
        if ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise StepError(f"{path}:{text.count(chr(10), 0, i) + 1}: a ')' closes nothing")
            if depth == 0:
                out.append(" ".join(text[start:i + 1].split()))
    if depth:
        raise StepError(f"{path}: {depth} bracket(s) left open at the end")
    return out


def sections(ptb: Path, wanted) -> list:
    """The trees of the WSJ sections ``wanted`` (two-digit names) of PTB (LDC99T42's parsed/mrg/wsj, or that
    folder itself), in section and file order."""
    wsj = next((p for p in (ptb / "parsed" / "mrg" / "wsj", ptb / "wsj", ptb) if (p / "23").is_dir()), None)
    if wsj is None:
        raise StepError(f"{ptb}: no WSJ section folders (want PTB/parsed/mrg/wsj/00 .. 24, as LDC99T42)")
    trees = []
    for sec in wanted:
        files = sorted((wsj / sec).glob("wsj_*.mrg"))
        if not files:
            raise StepError(f"{wsj / sec}: no wsj_*.mrg file")
        for f in files:
            trees += mrg_trees(f)
    return trees


def ptb_layout(args) -> dict:
    """The data layout scripts/recipes/induction_wsj.sh reads (its SHARED argument), from the user's treebank:
    ptb_sample/train.mrg = the training sections, wsj22/ = section 22 (model selection), ptb_sample/valid.mrg =
    section 23 (the papers' test set, scored as induction_wsj.sh's `ptbvalid` row), with the Stanford
    dependencies of 22 and 23 from DEPS (wsj22.sd.conll, wsj23.sd.conll) and empty extra text."""
    ptb, deps, out = Path(args.ptb), Path(args.deps), Path(args.out) / "data"
    train = [f"{s:02d}" for s in range(2, 22)] if args.train == "02-21" else \
        [f"{s:02d}" for s in range(25) if s != 22]  # all: 22 comes from wsj22.mrg (induction_wsj.sh's wsj_all)
    counts = {"train": write_lines(out / "ptb_sample" / "train.mrg", sections(ptb, train)),
              "wsj22": write_lines(out / "wsj22" / "wsj22.mrg", sections(ptb, ["22"])),
              "wsj23": write_lines(out / "ptb_sample" / "valid.mrg", sections(ptb, ["23"]))}
    for name, dest in (("wsj22.sd.conll", out / "wsj22" / "wsj22.sd.conll"),
                       ("wsj23.sd.conll", out / "ptb_sample" / "valid.conllu")):
        if not (deps / name).is_file():
            raise StepError(f"{deps / name}: missing (Stanford basic dependencies 3.3.0 of the section: "
                            "docs/reproduce.md gives CoreNLP's conversion command)")
        shutil.copyfile(deps / name, dest)
        sentences = sum(1 for block in (deps / name).read_text(encoding="utf-8").split("\n\n") if block.strip())
        tree_key = "wsj22" if name.startswith("wsj22") else "wsj23"
        if sentences != counts[tree_key]:
            raise StepError(f"misaligned: {deps / name} has {sentences} sentences, section "
                            f"{tree_key[3:]} has {counts[tree_key]} trees")
    for name in ("wsj15-18.txt", "wsj20.txt"):  # induction_wsj.sh's extra text: none here
        write_lines(out / "wsj_text" / name, [])
    return counts


# ------------------------------------------------------------------------------------------------ the tables

#: the papers' numbers: Nguyen et al. 2020 Tables 1-3 (BLEU, accuracy), Mrini et al. 2020 Tables 1 and 3 (PTB
#: test F1 / UAS / LAS), Wang et al. 2019 Table 1 (WSJ23 UF1, median of runs), Shen et al. 2021 Table 2 (WSJ23 UF1,
#: Stanford UAS / UUAS)
PAPER = {
    "nguyen-table1": {
        "iwslt14-en-de": {"transformer": 28.35, "tree2seq": 29.47, "tree2seq_nohier": 29.20,
                          "tree2seq_nosubmask": 29.05, "tree2seq_nohier_nosubmask": 28.98},
        "iwslt14-de-en": {"transformer": 34.42, "tree2seq": 35.96},
        "iwslt13-en-fr": {"transformer": 43.75, "tree2seq": 45.53, "tree2seq_nohier": 44.80,
                          "tree2seq_nosubmask": 45.07, "tree2seq_nohier_nosubmask": 44.50},
        "iwslt13-fr-en": {"transformer": 42.84, "tree2seq": 44.34},
        "wmt14-en-de": {"transformer": 27.30, "tree2seq": 28.40},
    },
    "nguyen-table2": {
        "sst5": {"transformer": 37.6, "tree": 47.4, "tree_nohier": 46.1, "tree_nosubmask": 45.7,
                 "tree_nohier_nosubmask": 45.0},
        "sst2": {"transformer": 74.8, "tree": 84.3},
        "imdb": {"transformer": 86.5, "tree": 90.1},
        "sva": {"transformer": 94.4, "tree": 98.0},
    },
    "mrini-table3": {  # F1, UAS, LAS on WSJ23
        "xlnet": (96.34, 97.33, 96.29), "bert": (95.84, 97.00, 95.43),  # bert: Zhou & Zhao's HPSG + BERT row
        "xlnet_l2": (96.13, 97.16, 96.09), "xlnet_l2_nopwff": (84.86, 87.14, 82.98),
        "xlnet_l2_nopwff_noresdrop": (96.16, 97.30, 96.17),
    },
    "wang-table1": {"constituent_transformer": (49.5, None, None), "right": (39.8, None, None)},  # WSJ-train
    "wang-table1-all": {"constituent_transformer": (50.5, None, None)},  # WSJ-all
    "shen-table2": {"structformer": (54.0, 46.2, 61.6), "right": (39.8, None, None), "left": (9.0, None, None)},
}


def mean_sd(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    m = sum(values) / len(values)
    if len(values) == 1:
        return f"{m:.2f}"
    sd = (sum((v - m) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    return f"{m:.2f} ± {sd:.2f} ({len(values)})"


def by_run(paths, key):
    """{run name: [values of ``key`` over its seeds]} from ``.../RUN_sSEED/FILE`` (or ``.../RUN/sSEED/FILE``)."""
    runs = {}
    for p in sorted(paths):
        name = p.parent.name.rsplit("_s", 1)[0] if "_s" in p.parent.name else p.parent.parent.name
        runs.setdefault(name, []).append(key(json.loads(p.read_text(encoding="utf-8").strip().splitlines()[-1])))
    return runs


def table(args) -> str:
    """The paper's rows beside ours, a Markdown table (every finished run; mean ± sd over seeds)."""
    work, name, row = Path(args.work), args.name, args.row
    lines = []
    if name == "nguyen-table1":
        paper = PAPER[name][row]
        bleu = by_run(work.glob("ckpt/*/result.json"), lambda r: r["test_fairseq_bleu"])
        sacre = by_run(work.glob("ckpt/*/result.json"), lambda r: r["test_sacrebleu"])
        lines += [f"| {row}: run | tokenized BLEU (ours) | sacreBLEU (ours) | paper (tokenized BLEU) |",
                  "|---|---|---|---|"]
        for run in sorted(set(bleu) | set(paper), key=lambda r: (r not in paper, r)):
            lines.append(f"| {run} | {mean_sd(bleu.get(run, []))} | {mean_sd(sacre.get(run, []))} | "
                         f"{paper.get(run, '-')} |")
    elif name == "nguyen-table2":
        paper = PAPER[name][row]
        pattern = f"{row}/*/s*/test.json" if row.startswith("sst") else "runs/*/test.json"
        acc = by_run(work.glob(pattern), lambda r: r["accuracy"])
        lines += [f"| {row}: run | test accuracy (ours) | paper |", "|---|---|---|"]
        for run in sorted(set(acc) | set(paper), key=lambda r: (r not in paper, r)):
            lines.append(f"| {run} | {mean_sd(acc.get(run, []))} | {paper.get(run, '-')} |")
    elif name == "mrini-table3":
        paper = PAPER[name]
        scores = by_run(work.glob("*/scores_test.json"), lambda r: r)
        lines += ["| WSJ23: row | F1 (ours) | UAS | LAS | paper F1 | UAS | LAS |", "|---|---|---|---|---|---|---|"]
        for run in sorted(set(scores) | set(paper), key=lambda r: (r not in paper, r)):
            ours = [mean_sd([s.get(k) for s in scores.get(run, [])]) for k in ("f1", "uas", "las")]
            lines.append(f"| {run} | " + " | ".join(ours) + " | " + " | ".join(map(str, paper.get(run, "---"))) + " |")
    elif name in ("wang-table1", "wang-table1-all", "shen-table2"):
        paper = PAPER[name]
        found = sorted(work.glob("induction/*/*_s*/induce_ptbvalid/scores.json"))
        uf1 = {}
        for p in found:  # RUN_sSEED/induce_ptbvalid/scores.json
            r = json.loads(p.read_text(encoding="utf-8"))
            arch = p.parent.parent.name.rsplit("_s", 1)[0]
            uf1.setdefault(arch, []).append(r["model"])
            for base in ("right", "left"):
                uf1.setdefault(base, [r["baselines"][base]])
        lines += ["| WSJ23 | UF1 (ours) | UAS | UUAS | paper UF1 | UAS | UUAS |", "|---|---|---|---|---|---|---|"]
        for run in sorted(set(uf1) | set(paper), key=lambda r: (r not in paper, r)):
            ms = uf1.get(run, [])
            cells = [mean_sd([m.get("sentence_f1") for m in ms]),
                     mean_sd([m.get("attachment", {}).get("uas") for m in ms]),
                     mean_sd([m.get("attachment", {}).get("uuas") for m in ms])]
            p = paper.get(run, ("-", "-", "-"))
            lines.append(f"| {run} | " + " | ".join(cells) + " | " + " | ".join("-" if v is None else str(v)
                                                                           for v in p) + " |")
    else:
        raise StepError(f"no table {name!r} (nguyen-table1, nguyen-table2, mrini-table3, wang-table1, "
                        "wang-table1-all, shen-table2)")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ command line

def get_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="papers.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("fetch")
    a.add_argument("source")
    a.add_argument("dest")
    a = sub.add_parser("extract")
    a.add_argument("archive")
    a.add_argument("out")
    a = sub.add_parser("iwslt")
    for name in ("orig", "out"):
        a.add_argument(name)
    for flag in ("--pair", "--src", "--tgt", "--valid", "--test"):
        a.add_argument(flag, required=True)
    a.add_argument("--meta", choices=["2014", "later"], default="later",
                   help="the metadata lines dropped: fairseq's prepare-iwslt14.sh's (2014), or also <speaker> ...")
    a = sub.add_parser("wmt")
    for name in ("orig", "out"):
        a.add_argument(name)
    a.add_argument("--src", required=True)
    a.add_argument("--tgt", required=True)
    a = sub.add_parser("tokenize")
    for name in ("raw", "tok"):
        a.add_argument(name)
    a.add_argument("--src", required=True)
    a.add_argument("--tgt", required=True)
    a.add_argument("--max-len", type=int, default=175)
    a.add_argument("--ratio", type=float, default=1.5)
    a.add_argument("--valid-every", type=int, default=0, help="hold out every Nth cleaned training pair as valid")
    a = sub.add_parser("trivial-trees")
    for name in ("tok", "trees"):
        a.add_argument(name)
    a.add_argument("--src", required=True)
    a = sub.add_parser("lowercase")
    for name in ("tok", "trees", "out_tok", "out_trees"):
        a.add_argument(name)
    a.add_argument("--src", required=True)
    a.add_argument("--tgt", required=True)
    a = sub.add_parser("seq-databin")
    for name in ("tree_bin", "seq_bin"):
        a.add_argument(name)
    a.add_argument("--src", required=True)
    a.add_argument("--tgt", required=True)
    a = sub.add_parser("imdb")
    for name in ("aclimdb", "out"):
        a.add_argument(name)
    a.add_argument("--valid-every", type=int, default=20)
    a = sub.add_parser("imdb-join")
    for name in ("sents", "trees", "out"):
        a.add_argument(name)
    a = sub.add_parser("sva")
    for name in ("tsv", "out"):
        a.add_argument(name)
    a = sub.add_parser("ptb-layout")
    for name in ("ptb", "deps", "out"):
        a.add_argument(name)
    a.add_argument("--train", choices=["02-21", "all"], required=True)
    a = sub.add_parser("accuracy")
    a.add_argument("log")
    a = sub.add_parser("table")
    a.add_argument("name")
    a.add_argument("work")
    a.add_argument("--row", help="the table's row group: a language pair (nguyen-table1) or a task (nguyen-table2)")
    return p


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    try:
        if args.cmd == "fetch":
            fetch(args.source, Path(args.dest))
        elif args.cmd == "accuracy":
            print(json.dumps(accuracy(Path(args.log))))
        elif args.cmd == "extract":
            extract(Path(args.archive), Path(args.out))
        elif args.cmd == "table":
            print(table(args))
        else:
            steps = {"iwslt": iwslt, "wmt": wmt, "tokenize": tokenize, "trivial-trees": trivial_trees,
                     "lowercase": lowercase, "seq-databin": seq_databin, "imdb": imdb, "imdb-join": imdb_join,
                     "sva": sva, "ptb-layout": ptb_layout}
            print(json.dumps({args.cmd: steps[args.cmd](args)}))
    except (StepError, OSError) as e:
        print(f"papers.py {args.cmd}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
