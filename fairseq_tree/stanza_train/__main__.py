"""``python -m fairseq_tree.stanza_train``: the trainer's command line (as ``fairseq-tree-train-stanza``); the
trainer also runs itself this way for stanza's trainers (``--_offline-run``)."""

import sys

from fairseq_tree.stanza_train.trainer import main

sys.exit(main())
