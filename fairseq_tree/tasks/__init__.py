from fairseq_tree.tasks import tree_translation  # noqa: F401  (registers the task)
