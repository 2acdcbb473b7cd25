"""Shared test fixtures. Data comes from ../shared (never copied into the repo)."""

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
BIN = Path(sys.executable).parent  # the venv's console scripts (fairseq-train, fairseq-tree-preprocess)

sys.path.insert(0, str(Path(__file__).resolve().parent))
