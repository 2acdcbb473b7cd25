"""A task's own criterion: each task names the criteria its models' outputs fit and picks its default.

fairseq builds whatever ``--criterion`` says (default ``cross_entropy``) and only fails deep inside the loss
(``TypeError: tuple indices must be integers or slices, not str`` for ``tree_induction`` without
``--criterion masked_lm``). A task with :class:`CriterionCheck` instead
- replaces fairseq's default ``cross_entropy``, when that does not fit the task, by the task's own default
  (and says so in the log; the run's config, hence the checkpoint, records the criterion really used);
- refuses any other criterion that does not fit, with a message that names the ones that do.
"""

import logging
from argparse import Namespace

from fairseq import criterions
from omegaconf import DictConfig, OmegaConf, open_dict

from fairseq_tree.utils.signatures import accepted

logger = logging.getLogger(__name__)

FAIRSEQ_DEFAULT_CRITERION = "cross_entropy"


def criterion_name(cfg) -> str:
    """Name of the criterion a (Dict)config asks for (``_name`` in hydra configs, ``criterion`` in Namespaces)."""
    if isinstance(cfg, DictConfig):
        return cfg.get("_name", None) or FAIRSEQ_DEFAULT_CRITERION
    if isinstance(cfg, Namespace):
        return getattr(cfg, "criterion", None) or FAIRSEQ_DEFAULT_CRITERION
    return str(cfg)


def _config_of(name: str, cfg):
    """A hydra config node for criterion ``name`` whose ``${...}`` fields resolve against the run's config:
    it replaces ``cfg`` under the run's root (so ``sentence_avg``, ``tpu`` and the saved config follow)."""
    node = OmegaConf.structured(criterions.CRITERION_DATACLASS_REGISTRY[name]())
    node._name = name  # fairseq's registry builds by this field
    root = cfg._get_root() if isinstance(cfg, DictConfig) else None
    if root is not None and root is not cfg and "criterion" in root:
        with open_dict(root):  # omegaconf 2.0 (fairseq 0.12.2) keeps the old node's type unless it is deleted first
            del root["criterion"]
            root["criterion"] = node
        return root.criterion
    return node


class CriterionCheck:
    """Mixin for a :class:`fairseq.tasks.FairseqTask`: set ``COMPATIBLE_CRITERIA`` (names) and
    ``DEFAULT_CRITERION`` (used when the user left fairseq's default ``cross_entropy`` and it does not fit)."""

    COMPATIBLE_CRITERIA: tuple = ()
    DEFAULT_CRITERION: str = ""

    def build_criterion(self, cfg, from_checkpoint=False):
        name = criterion_name(cfg)
        task = getattr(self.cfg, "_name", None) or type(self).__name__
        if name not in self.COMPATIBLE_CRITERIA:
            if name != FAIRSEQ_DEFAULT_CRITERION or not self.DEFAULT_CRITERION:
                raise ValueError(
                    f"{task} does not work with --criterion {name}: pass --criterion "
                    + " or --criterion ".join(self.COMPATIBLE_CRITERIA))
            logger.info("%s: --criterion %s (the task's default; fairseq's default %s does not fit its models)",
                        task, self.DEFAULT_CRITERION, FAIRSEQ_DEFAULT_CRITERION)
            return criterions.build_criterion(_config_of(self.DEFAULT_CRITERION, cfg), self,
                                              **accepted(criterions.build_criterion, from_checkpoint=from_checkpoint))
        return super().build_criterion(cfg, **accepted(super().build_criterion, from_checkpoint=from_checkpoint))


__all__ = ["CriterionCheck", "criterion_name"]
