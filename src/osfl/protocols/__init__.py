"""Training protocols beyond the one-shot pipeline (several rounds of client training and server aggregation)."""
