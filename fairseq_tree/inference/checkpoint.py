"""Loading a checkpoint: the one place that calls fairseq's ``load_model_ensemble_and_task`` (hub interfaces,
CLIs and parser backends all come through here)."""

from typing import Optional

from fairseq_tree.utils.devices import check_device


def load_checkpoint(path: str, data: Optional[str] = None, device: str = "cpu", **overrides):
    """-> (models in eval mode on ``device``, cfg, task). ``data``: the data directory (dictionaries) when not
    the one recorded in the checkpoint; ``overrides``: further ``arg_overrides`` of the saved config.
    ``device``: ``cpu``, ``cuda`` or ``cuda:N`` (ValueError if unusable here, before anything is loaded)."""
    from fairseq import checkpoint_utils  # (fairseq_tree, this module's package, has registered the plugin)

    check_device(device)
    if data:
        overrides["data"] = data
    models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides)
    return [m.to(device).eval() for m in models], cfg, task


__all__ = ["load_checkpoint"]
