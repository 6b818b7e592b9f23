"""Questions answered with fixed queries: recall, the recall log, memory as of a date, the
audit and its chain, corrections, exports. Reads never import an action."""
