"""The errors the firmware bridge raises, each a subclass of one of the project's area classes
in :mod:`controller.errors` (so ``except DeviceError`` catches every hardware failure).

Every message says what happened and what an installer or player can do about it.
"""

from __future__ import annotations

from controller.errors import ConfigError, DeviceError, LinkError, ProtocolError

__all__ = [
    "BridgeConfigError",
    "CommandFailed",
    "CommandTimeout",
    "FrameError",
    "InterlockError",
    "LinkDown",
    "MessageError",
    "PinError",
]


class FrameError(ProtocolError):
    """Bytes that do not form a valid frame (bad length, bad CRC, unknown frame kind)."""


class MessageError(ProtocolError):
    """A frame whose payload is not a message of the protocol (unknown type, wrong length),
    or a message that cannot be encoded (a field out of range)."""


class LinkDown(LinkError):
    """The serial port could not be opened, or the table did not answer the handshake in time."""


class CommandTimeout(DeviceError):
    """A command got no final answer within its timeout.

    ``maybe_executed`` is False when the command was withdrawn before it ever left the host
    (the table certainly did not run it); True when it was sent and the table may still have
    carried it out, in which case check :meth:`TableDevice.status` before retrying. A command
    that never left because the link was down all along raises :class:`LinkDown` instead.
    """

    def __init__(self, message: str, *, command: str, maybe_executed: bool) -> None:
        super().__init__(message)
        self.command = command
        self.maybe_executed = maybe_executed


class CommandFailed(DeviceError):
    """The table refused a command or reported that it could not complete it.

    ``reason`` is a short machine-readable code (``"busy"``, ``"fault"``, ``"lid_open"``,
    ``"not_ready"``, ``"mcu_reset"``, ...); ``fault`` names the table fault when one stopped the
    command (``"jam"``, ``"tiles_short"``, ``"lid_open"``, ``"motor_stall"``, ...).
    """

    def __init__(
        self, message: str, *, command: str, reason: str, fault: str | None = None
    ) -> None:
        super().__init__(message)
        self.command = command
        self.reason = reason
        self.fault = fault


class InterlockError(CommandFailed):
    """A safety interlock refused the command: a shuffle while a hand is in progress, motion
    with the lid open. Raised by the host before anything is sent, or when the table itself
    refuses for the same reason. Emergency stop is never refused."""


class BridgeConfigError(ConfigError):
    """A ``[serial]`` or ``[seat_panel]`` setting that cannot be used; ``field`` names the key."""


class PinError(DeviceError):
    """The seat panel's GPIO pins could not be set up (no pin factory, a pin in use)."""
