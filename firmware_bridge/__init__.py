"""The bridge to the table's hardware: the serial protocol spoken with the table's
microcontroller (shuffler, wall lifts, dice, sensors) and the GPIO seat panel.

It knows bytes, frames, commands and pins; nothing about mahjong beyond "dice" and "shuffle".
It imports nothing of the project but :mod:`controller.errors`.

* :mod:`~firmware_bridge.table_device`: :class:`TableDevice`, the host API (start here): a
  blocking facade whose one I/O thread owns the port
* :mod:`~firmware_bridge.session`: :class:`~firmware_bridge.session.DeviceSession`, the
  session without I/O (handshake, epochs, exactly-once commands, resets): bytes and time in,
  frames and events out
* :mod:`~firmware_bridge.seat_panel`: :class:`SeatPanel`, buttons, LEDs and buzzer on gpiozero
* :mod:`~firmware_bridge.config`: the ``[serial]`` and ``[seat_panel]`` config sections
* :mod:`~firmware_bridge.protocol`, :mod:`~firmware_bridge.link`,
  :mod:`~firmware_bridge.framing`, :mod:`~firmware_bridge.serial_port`: the protocol's layers
  (``docs/protocol.md``), shared with the simulated MCU in :mod:`hardware_sim.mcu`
* :mod:`~firmware_bridge.errors`: the bridge's exception types
"""
