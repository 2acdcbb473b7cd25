"""The options of the preprocessing pipeline as one dataclass: ``fairseq-tree-preprocess`` builds it from its
arguments (:meth:`PreprocessConfig.from_args`), the library reads its fields (no ``getattr`` on a Namespace
downstream); field names and defaults are the CLI's, in its order, so ``preprocess.json``'s ``command`` is
:func:`dataclasses.asdict` of it."""

from dataclasses import dataclass, field, fields
from typing import List, Optional


@dataclass
class PreprocessConfig:
    # what and where
    task: str = "translation"  # translation | classification
    source_lang: Optional[str] = None
    target_lang: Optional[str] = None
    trainpref: Optional[str] = None
    validpref: Optional[str] = None
    testpref: Optional[str] = None
    destdir: str = "data-bin"
    only_source: bool = False
    workers: int = 1
    # dictionaries
    joined_dictionary: bool = False
    srcdict: Optional[str] = None
    tgtdict: Optional[str] = None
    labeldict: Optional[str] = None
    nwordssrc: int = -1
    nwordstgt: int = -1
    thresholdsrc: int = 0
    thresholdtgt: int = 0
    # text, trees, BPE
    tokenize: str = "moses"
    parser: Optional[str] = None  # stanza | lal | induced | given
    trees_dir: Optional[str] = None
    unary: str = "lowest"
    bpe_codes: Optional[str] = None
    bpe_merges: Optional[int] = None
    max_positions: int = 1024
    on_error: str = "fail"
    # work units and shards
    parse_batch_size: int = 256
    shard_size: int = 2000
    keep_work: bool = False
    num_shards: Optional[int] = None
    shard_id: Optional[int] = None
    dict_only: bool = False
    # classification
    labels: Optional[str] = None
    num_classes: int = 5
    class_names: Optional[str] = None
    binary: bool = False
    node_inputs: str = "symbol"
    # parser backends
    device: Optional[str] = None  # None: the GPU when there is one
    parser_model: Optional[str] = None
    parser_data: Optional[str] = None
    stanza_model_dir: Optional[str] = None
    stanza_pos_model: Optional[str] = None
    stanza_constituency_model: Optional[str] = None
    stanza_pretrain: Optional[str] = None
    stanza_lang: str = "en"
    stanza_download: bool = False
    stanza_batch_size: int = 64
    # job arrays
    launcher: Optional[str] = None  # local | slurm
    jobs: Optional[int] = None
    launcher_dir: Optional[str] = None
    slurm_partition: Optional[str] = None
    slurm_account: Optional[str] = None
    slurm_time: int = 240
    slurm_cpus_per_task: Optional[int] = None
    slurm_gpus_per_node: int = 0
    slurm_mem_gb: Optional[int] = None
    slurm_array_parallelism: int = 256
    slurm_setup: List[str] = field(default_factory=list)

    @classmethod
    def from_args(cls, args) -> "PreprocessConfig":
        """From the CLI's Namespace; an attribute the Namespace lacks takes the field's default, one the dataclass
        lacks is an error (a CLI option the library would never read)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(vars(args)) - names - {"func"})
        if unknown:
            raise TypeError(f"PreprocessConfig has no field for {unknown}")
        return cls(**{k: v for k, v in vars(args).items() if k in names})


__all__ = ["PreprocessConfig"]
