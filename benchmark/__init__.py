"""The model layer (agents, point formats) and the evaluation benchmarks and their scorers."""
