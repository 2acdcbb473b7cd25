from fairseq_tree.models import tree2seq_transformer  # noqa: F401  (registers tree2seq and its architectures)
