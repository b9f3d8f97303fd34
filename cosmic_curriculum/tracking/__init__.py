"""Experiment trackers (TensorBoard, MLflow, Weights & Biases): docs/TRACKING.md.

``metrics`` says what a decision, an attempt and an SB3 dump yield (pure); ``outbox``
keeps what is to be delivered in the workspace; ``queue`` turns the run's state into
events; ``delivery`` sends them, each tracker in its own process with a timeout;
``backends`` talks to the libraries; ``sb3`` is the logger output a trainer feeds.
"""
