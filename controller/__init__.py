"""The table controller: the Shanghai rules engine, the table state machine and its storage.

``controller.rules`` is pure (values in, values out) and imports nothing else of ours; every
other part of the project may import it.
"""
