"""``fairseq-tree-user-dir``: print the directory of the installed plugin, for fairseq's ``--user-dir`` from any
working directory:

    fairseq-train DATA --user-dir "$(fairseq-tree-user-dir)" --task tree_translation --arch tree2seq ...

(fairseq resolves a relative ``--user-dir fairseq_tree`` against the working directory, so that spelling works only
from a checkout's root.) Prints nothing else; imports neither fairseq nor torch.

This module sits beside the ``fairseq_tree`` package, not inside it: importing anything inside the package runs
the package's ``__init__``, which registers the plugin with fairseq (and so imports fairseq and torch, seconds) as
it must when fairseq's ``import_user_module`` imports the directory printed here.
"""

import argparse
import importlib.util
import os
import sys


def plugin_dir() -> str:
    """-> the absolute directory of the importable ``fairseq_tree`` package (found, not imported)."""
    spec = importlib.util.find_spec("fairseq_tree")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("fairseq_tree is not installed in this Python")
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def main(argv=None) -> int:
    # (the docstring's ``literals`` as plain text: fairseq_tree.utils.help_text would import the package)
    description = __doc__.split("\n\n")[0].replace("``", "")
    argparse.ArgumentParser(prog="fairseq-tree-user-dir", description=description).parse_args(argv)
    print(plugin_dir())
    return 0


def cli_main() -> None:
    sys.exit(main())


if __name__ == "__main__":
    cli_main()
