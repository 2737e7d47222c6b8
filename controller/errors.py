"""Every exception type of the project, one root (:class:`MahjongTableError`), one subclass
per area. Catch the root to catch anything the project raises on purpose.

The rules' errors are defined inside the pure rules package and re-exported here.
"""

from __future__ import annotations

from controller.rules.errors import (
    HandError,
    MahjongTableError,
    ProfileError,
    RulesError,
    WinInputError,
)

__all__ = [
    "CameraError",
    "ConfigError",
    "DataError",
    "DeviceError",
    "HandError",
    "LinkError",
    "MahjongTableError",
    "ModelError",
    "ProfileError",
    "ProtocolError",
    "RulesError",
    "StorageError",
    "VisionError",
    "WinInputError",
]


class ConfigError(MahjongTableError):
    """A table configuration file or setting that cannot be used."""


class DataError(MahjongTableError):
    """Training or evaluation data (labelled photos) that cannot be used: bad input, as a
    command's exit status says (2), not a fault of the camera or the model (3)."""


class DeviceError(MahjongTableError):
    """The table's hardware (MCU over serial, seat panel over GPIO) did not do what was asked."""


class ProtocolError(DeviceError):
    """Bytes on the serial line that break the protocol (bad frame, unknown message)."""


class LinkError(DeviceError):
    """The serial link to the table MCU is down, lost or could not be opened."""


class VisionError(MahjongTableError):
    """The camera or the tile recogniser failed."""


class CameraError(VisionError):
    """A camera that cannot be opened, stopped delivering frames, or an unreadable image."""


class ModelError(VisionError):
    """A recognition model that is missing, corrupt or of the wrong shape."""


class StorageError(MahjongTableError):
    """The ledger or event log could not be read or written."""
