"""Fake trainer and evaluator honouring the training/evaluation command contracts."""
