"""``fairseq-tree-score``: score any parser's output against a gold treebank, as EVALB (COLLINS.prm) or, with
``--unsupervised``, as the unsupervised-parsing literature does.

    fairseq-tree-score --gold wsj22.mrg --pred parsed.trees [--per-sentence] [--delete-wrappers]
    fairseq-tree-score --gold wsj22.mrg --pred parsed.trees --gold-dep wsj22.sd.conll --pred-dep parsed.conllu
    fairseq-tree-score --unsupervised --gold wsj22.mrg --pred out/trees.txt \\
        [--gold-dep wsj22.sd.conll --pred-dep out/deps.conllu]

Prints EVALB's summary (``=== Summary ===``, the ``-- All --`` and ``-- len<=40 --`` blocks; with
``--per-sentence`` first EVALB's per-sentence table) and, as its last line, one JSON object: ``recall``,
``precision``, ``f1``, ``tagging_accuracy``, ``skipped`` (sentences EVALB does not score: ``error_sentences`` +
``skip_sentences``, counted by reason in ``skipped_by_reason``), the other summary numbers, the ``len<=40`` block,
``rules`` and ``delete_labels``; ``uas``/``las`` with dependencies. ``--unsupervised``: ``uf1`` (sentence-level
mean), ``corpus_f1`` (= ``f1``; ``recall``/``precision`` corpus-level), ``label_recall``, ``skipped`` (sentences of
fewer than 2 words), and ``uas``/``uuas`` with dependencies. The library is
:mod:`fairseq_tree.evaluation.bracket_f1` and :mod:`fairseq_tree.evaluation.unsupervised`.
"""

import argparse
import json
import sys

from fairseq_tree.evaluation import bracket_f1, unsupervised
from fairseq_tree.trees import TreeFormatError
from fairseq_tree.utils.help_text import ArgumentParser

EVALB_HELP = """Files hold one tree per line, as EVALB reads them (a tree may also continue over several lines of the
gold file); a blank line of --pred is a sentence the parser did not parse (EVALB's "skip"). The rules are EVALB's
with COLLINS.prm: words tagged TOP -NONE- , : `` '' . are deleted from each tree by its own tags, TOP brackets are
not counted, ADVP = PRT, words are compared as written (-LCB- is not {); a sentence whose remaining words differ
in number ("Length unmatch") or spelling ("Words unmatch") is an error sentence and not scored. COLLINS.prm deletes
no other label: a ROOT bracket or the empty-label wrapper of "( (S ...) )" counts as a constituent, as in EVALB,
unless --delete-wrappers (reported as "rules" in the JSON)."""


def get_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="fairseq-tree-score", epilog=EVALB_HELP, description=(
        "Score any parser's output against a gold treebank as EVALB (COLLINS.prm) does or, with --unsupervised, "
        "as the unsupervised-parsing literature does."))
    p.add_argument("--gold", required=True, help="gold bracketed trees (.mrg)")
    p.add_argument("--pred", help="predicted bracketed trees, one per line (required unless only dependencies)")
    p.add_argument("--gold-dep", help="gold dependencies (CoNLL-U / CoNLL-X) of the same sentences")
    p.add_argument("--pred-dep", help="predicted dependencies (CoNLL-U / CoNLL-X): UAS / LAS without punctuation "
                                      "(--unsupervised: UAS / UUAS over the words)")
    p.add_argument("--unsupervised", action="store_true",
                   help="UF1 by the unsupervised-parsing literature's rules (words only, spans >= 2 words, sentence "
                        "span excluded, mean over sentences of >= 2 words); predicted leaves may be bare words and "
                        "may be the gold's words only or all its tokens")
    p.add_argument("--per-sentence", action="store_true", help="print EVALB's per-sentence table first")
    p.add_argument("--delete-wrappers", action="store_true",
                   help="also delete ROOT and empty-label brackets (fairseq-tree's readers drop these wrappers; "
                        "EVALB with COLLINS.prm counts them)")
    p.add_argument("--cutoff-len", type=int, default=40, help="length cut-off of EVALB's second block (default 40)")
    return p


def run(args) -> dict:
    """Score as ``args`` say; print the summary and the JSON line; return the JSON object."""

    if args.pred is None and args.pred_dep is None:
        raise SystemExit("give --pred and/or --pred-dep")
    if (args.gold_dep is None) != (args.pred_dep is None):
        raise SystemExit("--gold-dep and --pred-dep go together")
    if args.unsupervised:
        result = unsupervised.score_files(args.gold, args.pred, args.gold_dep, args.pred_dep)
        print(unsupervised.format_unsupervised(result))
    else:
        result = {}
        if args.pred is not None:
            scorer = bracket_f1.score_files(args.gold, args.pred, args.delete_wrappers, args.cutoff_len)
            print(bracket_f1.format_report(scorer, per_sentence=args.per_sentence))
            for s in scorer.skipped:
                print(f"{args.pred}:{s.pred_line}: sentence {s.sentence} not scored: {s.message}", file=sys.stderr)
            result.update(scorer.result())
        if args.pred_dep is not None:
            result.update(bracket_f1.score_dependency_files(args.gold_dep, args.pred_dep))
    print(json.dumps(result))
    return result


def main(argv=None) -> dict:
    args = get_parser().parse_args(argv)
    try:
        return run(args)
    except (TreeFormatError, ValueError, OSError) as e:
        raise SystemExit(f"fairseq-tree-score: {e}") from e


def cli_main() -> None:
    main()


if __name__ == "__main__":
    cli_main()
