from fairseq_tree.models import (
    constituent_transformer,  # noqa: F401  (registers constituent_transformer and its architectures)
    lal_parser,  # noqa: F401  (registers lal_parser and its architectures)
    mlm_transformer,  # noqa: F401  (registers mlm_transformer and its architectures)
    structformer,  # noqa: F401  (registers structformer and its architectures)
    tree2seq_transformer,  # noqa: F401  (registers tree2seq and its architectures)
    tree_classifier,  # noqa: F401  (registers tree_classifier and transformer_classifier)
)
