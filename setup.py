from setuptools import find_packages, setup

setup(
    name="fairseq-tree",
    version="0.1.0",
    description="Syntax trees in fairseq Transformers: tree2seq, constituent attention, StructFormer, LAL parser",
    packages=find_packages(include=["fairseq_tree", "fairseq_tree.*", "preprocess", "preprocess.*"]),
    python_requires=">=3.9",
    install_requires=[
        "torch>=2.0",
        "fairseq>=0.12.2",
        "sacremoses",
        "subword-nmt",
        "stanza",
        "nltk",
        "sacrebleu>=2.0",
        "matplotlib",
        "tqdm",
        "numpy",
    ],
    entry_points={
        "console_scripts": [
            "fairseq-tree-preprocess = preprocess.cli:cli_main",
        ]
    },
)
