"""The bridge to the table's hardware: the serial protocol spoken with the table's
microcontroller (shuffler, wall lifts, dice, sensors) and the GPIO seat panel.

It knows bytes, frames, commands and pins; nothing about mahjong beyond "dice" and "shuffle".
"""
