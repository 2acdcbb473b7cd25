"""Runtime text processing that training, inference and the pipeline share: the tokenizer (sacremoses),
BPE (subword-nmt; the fast type-level apply) and word normalisation. Imports nothing above :mod:`fairseq_tree.utils`."""
