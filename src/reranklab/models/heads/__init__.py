"""Scoring heads that sit on an encoder's output (or on cached encoder features), one per module.

A head is a plain ``nn.Module`` on tensors, independent of how the encoder features were
obtained: the fine-tuned variants run the encoder and feed its output to the head; the lite
variants feed the head features read from the frozen encoder's cache.
"""
