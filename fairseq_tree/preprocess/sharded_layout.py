"""fairseq's sharded data layout: ``DESTDIR/shard0``, ``DESTDIR/shard1``, ... read as
``fairseq-train DESTDIR/shard0:DESTDIR/shard1:...`` (one shard per epoch, round robin).

The training split is cut into ``--num-shards`` parts of consecutive lines (part i holds lines
``[i*N//K, (i+1)*N//K)``); valid and test go whole into ``shard0``, the directory fairseq reads them from.
Every shard directory holds the same dictionaries, BPE codes and classification scheme, so it is a complete
data-bin on its own.

Two ways to fill it: one command with ``--num-shards K`` (dictionaries and codes built from the whole training
split, the passes run by ``--workers`` or a ``--launcher``), or K independent commands with ``--shard-id I``
(any job array: SLURM, Kubernetes, a shell loop) after a first pass with ``--dict-only`` that fixes the
dictionaries and codes in DESTDIR (or with ``--srcdict/--tgtdict/--labeldict/--bpe-codes`` given).
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from fairseq_tree.preprocess.shards import PreprocessError, Shard, atomic_copy

#: what a first pass (``--dict-only``) leaves in DESTDIR and every shard directory gets a copy of
SHARED_FILES = ("bpe.codes", "classification.json")


def shard_dir(destdir: str, part: int) -> str:
    return os.path.join(destdir, f"shard{part}")


def part_ranges(num_lines: int, parts: int) -> List[Tuple[int, int]]:
    """``[(start, end), ...]``: ``parts`` runs of consecutive 0-based line numbers, sizes differing by <= 1."""
    return [(i * num_lines // parts, (i + 1) * num_lines // parts) for i in range(parts)]


def count_lines(path: str) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def line_offsets(path: str, starts: List[int]) -> List[int]:
    """Byte offsets of the 0-based lines ``starts`` (ascending), in one streaming pass."""
    out: List[int] = []
    want = iter(starts)
    nxt = next(want, None)
    pos = 0
    with open(path, "rb") as f:
        for i, line in enumerate(f):
            while nxt is not None and nxt == i:
                out.append(pos)
                nxt = next(want, None)
            if nxt is None:
                break
            pos += len(line)
    if nxt is not None:
        raise PreprocessError(f"{path}: file changed while it was read (line {nxt + 1} is gone)")
    return out


def check_parallel(files: Dict[str, str]) -> int:
    """The common line count of a split's files (src, tgt, trees); a FILE:LINE error when they differ."""
    counts = {}
    for role, path in files.items():
        if not os.path.exists(path):
            raise PreprocessError(f"{path}: no such file")
        counts[role] = count_lines(path)
    ref = counts["src"]
    for role, c in counts.items():
        if c != ref:
            short, long_ = (role, "src") if c < ref else ("src", role)
            raise PreprocessError(
                f"{files[short]}:{counts[short] + 1}: file ends after {counts[short]} lines, but "
                f"{files[long_]} has {counts[long_]} lines (source and target must be parallel)")
    if ref == 0:
        raise PreprocessError(f"{files['src']}: empty file")
    return ref


def make_shards(split: str, files: Dict[str, str], shard_size: int, parts: int = 1,
                only_part: Optional[int] = None) -> Dict[int, List[Shard]]:
    """The work shards (``shard_size`` lines) of each part of a split: ``{part: [Shard, ...]}``; with
    ``only_part`` just that part. Shard indices run over the whole split, so names never collide."""
    n = check_parallel(files)
    if parts > n:
        raise PreprocessError(f"{files['src']}: {n} lines cannot make --num-shards {parts} shards")
    ranges = part_ranges(n, parts)
    starts = {p: list(range(lo, hi, shard_size)) for p, (lo, hi) in enumerate(ranges)}
    chosen = [only_part] if only_part is not None else list(range(parts))
    wanted = sorted(s for p in chosen for s in starts[p])
    offsets = {role: dict(zip(wanted, line_offsets(path, wanted))) for role, path in files.items()}
    out: Dict[int, List[Shard]] = {}
    index = 0
    for p, (_lo, hi) in enumerate(ranges):
        if p in chosen:
            out[p] = [Shard(split, index + k, s + 1, min(shard_size, hi - s), {r: offsets[r][s] for r in files})
                      for k, s in enumerate(starts[p])]
        index += len(starts[p])
    return out


def first_pass_files(destdir: str, src: str, tgt: Optional[str]) -> Dict[str, str]:
    """The dictionaries and codes a ``--dict-only`` run left in ``destdir`` (those that exist)."""
    names = {"srcdict": f"dict.{src}.txt", "labeldict": f"dict.{src}.labels.txt", "bpe_codes": "bpe.codes"}
    if tgt:
        names["tgtdict"] = f"dict.{tgt}.txt"
    return {k: os.path.join(destdir, v) for k, v in names.items() if os.path.exists(os.path.join(destdir, v))}


def fix_vocabularies(args, destdir: str, src: str, tgt: Optional[str]) -> None:
    """``--shard-id``: take the dictionaries and codes from the flags, else from the first pass in ``destdir``;
    refuse to learn anything a shard's siblings would learn differently."""
    if args.bpe_merges:
        raise PreprocessError("--shard-id cannot learn BPE (--bpe-merges): every shard must use the same codes; "
                              "run a first pass with --dict-only and --bpe-merges, or give --bpe-codes")
    found = first_pass_files(destdir, src, tgt)
    for key, path in found.items():
        if not getattr(args, key):
            setattr(args, key, path)
    needed = ["srcdict", "labeldict"] + (["tgtdict"] if tgt and not args.joined_dictionary else [])
    missing = [k for k in needed if not getattr(args, k)]
    if missing:
        raise PreprocessError(
            f"--shard-id needs fixed vocabularies, and {destdir} has no first pass: run the same command with "
            f"--dict-only (no --shard-id) first, or give {' '.join('--' + k for k in missing)}")


def copy_shared(from_dir: str, dict_paths: Dict[str, str], out_dirs: List[str]) -> None:
    """Every shard directory gets the dictionaries, BPE codes and classification scheme (renamed into place)."""
    files = list(dict_paths.values()) + [os.path.join(from_dir, f) for f in SHARED_FILES]
    for d in out_dirs:
        os.makedirs(d, exist_ok=True)
        for f in files:
            dst = os.path.join(d, os.path.basename(f))
            if os.path.exists(f) and os.path.abspath(f) != os.path.abspath(dst):
                atomic_copy(f, dst)
