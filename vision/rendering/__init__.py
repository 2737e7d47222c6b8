"""Pictures of tiles and tables: tile faces, the renderer, whole table scenes.

Used by the simulator's camera (``hardware_sim.camera``) and by training; the run-time
recogniser on the Pi needs none of it.
"""
