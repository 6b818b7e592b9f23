"""``python -m tools.eval``: retrieval on eval/recall, each ranking beside its baselines."""

from tools.eval.recall import main

main()
