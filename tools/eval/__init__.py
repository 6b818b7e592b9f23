"""make eval: the quality of what memoryadmin measures on labelled sets (eval/)."""
