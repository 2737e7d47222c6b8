"""Overhead-camera vision: camera sources, table calibration, tile finding and classification,
and the grouping of tiles into each seat's melds and flowers.

Vision knows the tile vocabulary (``controller.rules.tiles``) and nothing about scoring.
"""
