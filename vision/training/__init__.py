"""Training and evaluation of the tile model: the training run (``train``), the photo data
set, synthetic pictures, int8 quantisation and the whole-table evaluation.

Needs the ``train`` extra (PyTorch, onnx) for the training itself; nothing of the run-time
vision package imports it at load.
"""
