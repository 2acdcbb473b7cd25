"""Console scripts: thin argparse layers over the library, one module per command (as ``fairseq_cli/`` is)."""
