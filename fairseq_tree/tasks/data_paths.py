"""Which of ``--data``'s colon-separated directories a split is read from (fairseq's translation rule)."""


def split_data_path(data: str, split: str, train_subset: str, epoch: int) -> str:
    """The training split rotates through the directories by epoch (1-based); every other split reads the first."""
    paths = data.split(":")
    return paths[(epoch - 1) % len(paths)] if split == train_subset else paths[0]
