"""fairseq-tree-average: the mean of hand-written parameters, fairseq's last-N selection, refusals that name
the file. (The run on real checkpoints, then fairseq-generate, is in test_tree2seq.py.)"""

import subprocess

import pytest
import torch
from conftest import BIN

from fairseq_tree.inference.average import CheckpointError, average_checkpoints, last_checkpoints


def _save(path, model, **rest):
    torch.save({"model": model, **rest}, path)
    return str(path)


def test_average_hand_computed_fp16_fp32_int(tmp_path):
    """(1 + 2 + 4) / 3 = 7/3 per element; fp16 stays fp16, ints are floor-divided as fairseq does."""
    paths = [_save(tmp_path / f"c{k}.pt", {"w": torch.tensor([1.0, 2.0]) * k,
                                            "h": torch.tensor([3.0, -6.0], dtype=torch.float16) * k,
                                            "n": torch.tensor([k, 2 * k + 1])}, extra_state={"k": k})
             for k in (1, 2, 4)]
    avg = average_checkpoints(paths)
    torch.testing.assert_close(avg["model"]["w"], torch.tensor([7 / 3, 14 / 3]))
    assert avg["model"]["h"].dtype == torch.float16
    torch.testing.assert_close(avg["model"]["h"], torch.tensor([7.0, -14.0], dtype=torch.float16))
    assert avg["model"]["n"].tolist() == [7 // 3, 17 // 3]  # sums 7 and 17
    assert avg["extra_state"] == {"k": 1} and avg["averaged_from"] == paths  # the first input's state


def test_last_checkpoints_by_update_and_epoch_with_upper_bound(tmp_path):
    for name in ("checkpoint_1_500.pt", "checkpoint_2_1000.pt", "checkpoint_3_1500.pt", "checkpoint_3_2000.pt",
                 "checkpoint1.pt", "checkpoint2.pt", "checkpoint10.pt", "checkpoint_best.pt", "checkpoint_last.pt"):
        (tmp_path / name).write_bytes(b"")
    d = str(tmp_path)
    assert last_checkpoints(d, 2) == [f"{d}/checkpoint_3_2000.pt", f"{d}/checkpoint_3_1500.pt"]
    assert last_checkpoints(d, 2, upper_bound=1999) == [f"{d}/checkpoint_3_1500.pt", f"{d}/checkpoint_2_1000.pt"]
    # numeric order, not string order: 10 > 2
    assert last_checkpoints(d, 2, by="epoch") == [f"{d}/checkpoint10.pt", f"{d}/checkpoint2.pt"]
    with pytest.raises(CheckpointError, match="3 update checkpoints at most 1999"):
        last_checkpoints(d, 4, upper_bound=1999)


def test_refusals_name_the_file(tmp_path):
    a = _save(tmp_path / "a.pt", {"w": torch.zeros(2)})
    b = _save(tmp_path / "b.pt", {"v": torch.zeros(2)})
    c = _save(tmp_path / "c.pt", {"w": torch.zeros(3)})
    (tmp_path / "d.pt").write_text("not a checkpoint")
    with pytest.raises(CheckpointError, match="b.pt: parameters differ"):
        average_checkpoints([a, b])
    with pytest.raises(CheckpointError, match=r"c.pt: w is torch.float32 \(3,\)"):
        average_checkpoints([a, c])
    with pytest.raises(CheckpointError, match="d.pt: not a readable checkpoint"):
        average_checkpoints([a, str(tmp_path / "d.pt")])
    out = tmp_path / "avg.pt"
    proc = subprocess.run([str(BIN / "fairseq-tree-average"), "--inputs", a, b, "--output", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "b.pt: parameters differ" in proc.stderr
    assert not out.exists() and list(tmp_path.glob("avg.pt*")) == []  # nothing half-written
