from fairseq_tree.models import tree2seq_transformer  # noqa: F401  (registers tree2seq and its architectures)
from fairseq_tree.models import lal_parser  # noqa: F401  (registers lal_parser and its architectures)
from fairseq_tree.models import constituent_transformer  # noqa: F401  (registers constituent_transformer and its architectures)
