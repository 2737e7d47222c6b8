"""The committed tile model: ``model.json`` (manifest), ``finder.onnx``, ``classifier.onnx``,
``base_head.npz``, and its card, ``MODEL_CARD.md``. Written by ``mahjong-table train``."""
