from fairseq_tree.data.tree_language_pair_dataset import TreeLanguagePairDataset, collate_tree_side

__all__ = ["TreeLanguagePairDataset", "collate_tree_side"]
