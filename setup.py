from setuptools import find_packages, setup

setup(
    name="fairseq-tree",
    version="0.1.0",
    description="Syntax trees in fairseq Transformers: tree2seq, constituent attention, StructFormer, LAL parser",
    packages=find_packages(include=["fairseq_tree", "fairseq_tree.*"]),
    python_requires=">=3.9",
    install_requires=[
        # fairseq is not listed: install torch (your CUDA build, or 2.13.0 CPU) and then fairseq yourself
        # (fairseq 0.12.2 below Python 3.11, fairseq-fixed 0.12.3.1 from 3.11; --no-build-isolation --no-deps,
        # since fairseq-fixed's metadata asks for torchaudio, which would replace your torch). See the README.
        "torch>=2.0",
        "sacremoses",
        "subword-nmt",
        "stanza==1.15.0",  # the offline trainer wrapper patches stanza internals
        "nltk",
        "sacrebleu>=2.0",
        "matplotlib",
        "tqdm",
        "submitit>=1.5.4",
        "numpy",
    ],
    entry_points={
        "console_scripts": [
            "fairseq-tree-preprocess = fairseq_tree.preprocess.cli:cli_main",
            "fairseq-tree-parse = fairseq_tree.evaluation.parse_cli:cli_main",
            "fairseq-tree-induce = fairseq_tree.evaluation.induce_cli:cli_main",
            "fairseq-tree-score = fairseq_tree.evaluation.score_cli:cli_main",
            "fairseq-tree-classify = fairseq_tree.evaluation.classify_cli:cli_main",
            "fairseq-tree-average = fairseq_tree.evaluation.average_cli:cli_main",
        ]
    },
)
