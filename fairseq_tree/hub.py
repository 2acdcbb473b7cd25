"""The hub, as a user imports it: ``Model.from_pretrained(...)`` of each family returns one of these interfaces
(defined beside the models, :mod:`fairseq_tree.models.hub_interface`, which imports nothing that imports them):

* :class:`TreeGeneratorHubInterface` (``tree2seq``): ``translate``;
* :class:`ClassifierHubInterface` (``tree_classifier``, ``transformer_classifier``): ``classify``;
* :class:`ParserHubInterface` (``lal_parser``): ``parse``;
* :class:`InductionHubInterface` (``constituent_transformer``, ``structformer``): ``induce``.
"""

from fairseq_tree.models.hub_interface import (
    ClassifierHubInterface,
    FromPretrained,
    InductionHubInterface,
    ParserHubInterface,
    TreeGeneratorHubInterface,
    checkpoint_path,
    data_path,
)

__all__ = ["ClassifierHubInterface", "FromPretrained", "InductionHubInterface", "ParserHubInterface",
           "TreeGeneratorHubInterface", "checkpoint_path", "data_path"]
