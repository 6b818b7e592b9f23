"""``python -m tools.eval``: retrieval on eval/recall and poisoned writes on eval/poison,
each beside its baselines (``--tune`` searches retrieval's constants instead)."""

import sys

from tools.eval import poison, recall

recall.main()
if "--tune" not in sys.argv[1:]:
    poison.main([])
