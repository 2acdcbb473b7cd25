from fairseq_tree.data.tree_language_pair_dataset import (
    LeafBatchedLanguagePairDataset,
    TreeLanguagePairDataset,
    collate_tree_side,
)

__all__ = ["LeafBatchedLanguagePairDataset", "TreeLanguagePairDataset", "collate_tree_side"]
