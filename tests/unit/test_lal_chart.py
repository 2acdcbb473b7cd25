"""CKY and Eisner against exhaustive search on short sentences (batched, padded)."""

import itertools

import pytest
import torch

from fairseq_tree.data.parsing_dataset import spans_to_chart
from fairseq_tree.modules.chart import cky, eisner, hamming, tree_score


def binary_trees(i, j):
    """All binary bracketings of (i, j) as lists of spans (every span of width >= 1 included)."""
    if j - i == 1:
        return [[(i, j)]]
    out = []
    for k in range(i + 1, j):
        for left in binary_trees(i, k):
            for right in binary_trees(k, j):
                out.append(left + right + [(i, j)])
    return out


def brute_cky(scores, n, gold=None, cost=1.0, enumerate_labels=False):
    """max over binary trees (and, if asked, every label assignment incl. empty) of the augmented score."""
    L = scores.shape[-1]
    best = -float("inf")
    for tree in binary_trees(0, n):
        if enumerate_labels:
            options = [range(L) if sp == (0, n) else range(-1, L) for sp in tree]  # -1 = empty
            for labs in itertools.product(*options):
                tot = 0.0
                for (i, j), c in zip(tree, labs):
                    g = 0 if gold is None else int(gold[i, j])
                    tot += (0.0 if c < 0 else float(scores[i, j, c])) + (cost if gold is not None and c + 1 != g else 0)
                best = max(best, tot)
        else:
            tot = 0.0
            for (i, j) in tree:
                vals = [float(scores[i, j, c]) + (cost if gold is not None and c + 1 != int(gold[i, j]) else 0)
                        for c in range(L)]
                if (i, j) != (0, n):
                    vals.append(cost if gold is not None and int(gold[i, j]) != 0 else 0.0)
                tot += max(vals)
            best = max(best, tot)
    return best


def _random_gold(n, L, g):
    gold = torch.zeros(n + 1, n + 1, dtype=torch.long)
    tree = binary_trees(0, n)[torch.randint(len(binary_trees(0, n)), (1,), generator=g).item()]
    for (i, j) in tree:
        if (i, j) == (0, n) or torch.rand((), generator=g) < 0.5:
            gold[i, j] = torch.randint(1, L + 1, (), generator=g)
    return gold


@pytest.mark.parametrize("augmented", [False, True])
def test_cky_matches_exhaustive(augmented):
    g = torch.Generator().manual_seed(0)
    L, N = 3, 6
    lengths = torch.tensor([1, 2, 3, 4, 5, 6, 4])
    scores = torch.randn(len(lengths), N + 1, N + 1, L, generator=g) * 2
    gold = torch.stack([_random_gold(N, L, g) for _ in lengths])  # only the part inside each length matters
    for b, nb in enumerate(lengths.tolist()):
        gold[b, :, nb + 1:] = 0
    spans, best = cky(scores, lengths, gold if augmented else None)
    for b, nb in enumerate(lengths.tolist()):
        expect = brute_cky(scores[b], nb, gold[b] if augmented else None)
        assert best[b].item() == pytest.approx(expect, abs=1e-4)
        # the returned spans realise that score and form a tree whose root is labeled
        assert (0, nb) in {(i, j) for i, j, _ in spans[b]}
        got = tree_score(scores[b:b + 1], [spans[b]]).item()
        if augmented:
            gold_spans = [(i, j, int(gold[b, i, j]) - 1) for i in range(nb) for j in range(i + 1, nb + 1)
                          if gold[b, i, j] > 0]
            # the augmentation charges the predicted tree's spans only (a missed gold span that the binary
            # tree does not contain costs nothing), so it lies between 0 and the full labeled-span Hamming
            assert got - 1e-4 <= expect <= got + hamming([spans[b]], [gold_spans])[0] + 1e-4
        else:
            assert got == pytest.approx(expect, abs=1e-4)


def test_cky_full_label_enumeration():
    """Independent check: enumerate every label (incl. empty) of every span of every binary tree."""
    g = torch.Generator().manual_seed(1)
    L, N = 2, 4
    lengths = torch.tensor([2, 3, 4])
    scores = torch.randn(3, N + 1, N + 1, L, generator=g)
    gold = torch.stack([_random_gold(N, L, g) for _ in range(3)])
    for aug in (None, gold):
        _, best = cky(scores, lengths, aug)
        for b, nb in enumerate(lengths.tolist()):
            expect = brute_cky(scores[b], nb, None if aug is None else aug[b], enumerate_labels=True)
            assert best[b].item() == pytest.approx(expect, abs=1e-4)


def test_gold_wins_by_margin_gives_zero_augmented_gap():
    """If every gold span's label beats every alternative by > 1, augmented CKY returns the gold tree."""
    n, L = 5, 3
    gold_spans = [(0, 2, 0), (2, 5, 1), (3, 5, 2), (0, 5, 0)]
    scores = torch.full((1, n + 1, n + 1, L), -3.0)
    for i, j, c in gold_spans:
        scores[0, i, j, c] = 3.0
    gold = spans_to_chart([gold_spans], n)
    spans, best = cky(scores, torch.tensor([n]), gold)
    assert sorted(spans[0]) == sorted(gold_spans)
    assert best.item() == pytest.approx(tree_score(scores, [gold_spans]).item())


# ---------------------------------------------------------------------------------------------- Eisner

def projective_single_root_trees(n):
    for heads in itertools.product(range(n + 1), repeat=n):
        if sum(h == 0 for h in heads) != 1 or any(h == d for d, h in enumerate(heads, 1)):
            continue
        ok = True
        for d in range(1, n + 1):  # acyclic
            seen, cur = set(), d
            while cur != 0 and ok:
                if cur in seen:
                    ok = False
                seen.add(cur)
                cur = heads[cur - 1]
        if not ok:
            continue
        arcs = [(min(h, d), max(h, d)) for d, h in enumerate(heads, 1)]
        if any(a < c < b < e for a, b in arcs for c, e in arcs):  # crossing
            continue
        yield heads


def test_eisner_matches_exhaustive():
    g = torch.Generator().manual_seed(2)
    N = 5
    lengths = torch.tensor([1, 2, 3, 4, 5, 3])
    scores = torch.randn(len(lengths), N + 1, N + 1, generator=g) * 3
    heads, best = eisner(scores, lengths)
    for b, nb in enumerate(lengths.tolist()):
        cands = [(sum(float(scores[b, h, d]) for d, h in enumerate(hs, 1)), hs)
                 for hs in projective_single_root_trees(nb)]
        expect, _ = max(cands)
        assert best[b].item() == pytest.approx(expect, abs=1e-4)
        got_heads = tuple(heads[b, 1:nb + 1].tolist())
        assert got_heads in {hs for _, hs in cands}  # a projective single-root tree
        assert sum(float(scores[b, h, d]) for d, h in enumerate(got_heads, 1)) == pytest.approx(expect, abs=1e-4)
        assert heads[b, nb + 1:].eq(0).all()

