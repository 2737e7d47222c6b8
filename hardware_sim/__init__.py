"""Simulated table hardware: an MCU behind a real pty, mock GPIO pins, a rendered camera.

Each piece plugs in where the real hardware would, through the product's own code paths.
"""
