"""The serial port under the link: opened through pyserial's ``serial_for_url`` (a device path,
a pty, ``socket://host:port``), exclusively, with errors turned into
:class:`~firmware_bridge.errors.LinkDown` messages an installer can act on.

``flush()`` is never called: on some USB serial drivers it blocks until the device drains its
buffer, which never happens once the device is gone.

On a POSIX serial device (a tty, a pty) reads and writes go straight to the descriptor pyserial
opened: one ``select`` and one ``read`` per read, one ``write`` per write. pyserial's own
``read(1)``, ``in_waiting``, ``read(n)`` take five system calls for the same bytes, and its
``write`` a ``select`` after every write; on a fast line that is a good part of a command's
round trip. Other URLs (``socket://`` ...) go through pyserial's methods.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select

import serial

from firmware_bridge.errors import LinkDown

__all__ = ["Backoff", "SerialPort"]


class Backoff:
    """Delays between reconnection attempts: ``first``, doubling, capped at ``cap``."""

    def __init__(self, first: float, cap: float) -> None:
        self.first = first
        self.cap = cap
        self._next = first

    def next(self) -> float:
        delay = self._next
        self._next = min(self._next * 2, self.cap)
        return delay

    def reset(self) -> None:
        self._next = self.first


def _explain_open_error(url: str, exc: BaseException) -> str:
    err = getattr(exc, "errno", None)
    text = str(exc)
    if err == errno.ENOENT or "No such file" in text or "[Errno 2]" in text:
        return (
            f"serial port {url} does not exist: is the table plugged in and powered? "
            "(for the simulator, start `mahjong-table sim-mcu` and use the path it prints)"
        )
    if err in (errno.EACCES, errno.EPERM) or "Permission denied" in text:
        return f"no permission to open {url}: add this user to the 'dialout' group"
    if "exclusively lock" in text or err in (errno.EAGAIN, errno.EWOULDBLOCK):
        return f"serial port {url} is in use by another program (another mahjong-table?)"
    if "Connection refused" in text or err == errno.ECONNREFUSED:
        return f"nothing is listening at {url}: is the simulator or serial bridge running?"
    return f"cannot open serial port {url}: {text}"


class SerialPort:
    """One serial connection. :meth:`read` waits at most ``read_timeout`` seconds (or the
    timeout it is given) and returns whatever arrived (possibly nothing); :meth:`read` and
    :meth:`write` raise :class:`LinkDown` when the device goes away (unplug, closed pty, dropped
    socket)."""

    def __init__(
        self,
        url: str,
        *,
        baudrate: int = 115200,
        read_timeout: float = 0.005,
        write_timeout: float = 0.5,
    ) -> None:
        self.url = url
        self.baudrate = baudrate
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self._ser: serial.SerialBase | None = None
        #: the descriptor of a POSIX serial device, read and written directly
        self._fd: int | None = None

    @property
    def is_open(self) -> bool:
        return self._ser is not None

    def open(self) -> None:
        if self._ser is not None:
            return
        try:
            self._ser = serial.serial_for_url(
                self.url,
                baudrate=self.baudrate,
                timeout=self.read_timeout,
                write_timeout=self.write_timeout,
                exclusive=True,
            )
        except (serial.SerialException, OSError, ValueError) as exc:
            raise LinkDown(_explain_open_error(self.url, exc)) from None
        # only pyserial's plain POSIX class: it opens the device non-blocking and reads it with
        # select and read, as below (its VTIME variant, for one, clears O_NONBLOCK)
        if os.name == "posix" and type(self._ser) is serial.Serial:
            self._fd = self._ser.fileno()

    def close(self) -> None:
        ser, self._ser = self._ser, None
        self._fd = None
        if ser is not None:
            with contextlib.suppress(serial.SerialException, OSError):
                ser.close()  # may fail on a port that is already gone

    def read(self, timeout: float | None = None) -> bytes:
        """What has arrived, waiting up to ``timeout`` seconds (default ``read_timeout``) for
        the first byte; ``b""`` if nothing came."""
        ser = self._ser
        if ser is None:
            raise LinkDown(f"serial port {self.url} is not open")
        fd = self._fd
        wait = self.read_timeout if timeout is None else timeout
        if fd is not None:
            try:
                if not select.select((fd,), (), (), wait)[0]:
                    return b""
                data = os.read(fd, 4096)
            except BlockingIOError:
                return b""
            except (OSError, ValueError) as exc:  # EIO: a pty whose other end closed
                raise LinkDown(f"lost serial port {self.url}: {exc}") from None
            if not data:
                raise LinkDown(f"lost serial port {self.url}: the device went away")
            return data
        try:
            data = ser.read(1)
            if data:
                waiting = ser.in_waiting
                if waiting:
                    data += ser.read(waiting)
            return data
        except (serial.SerialException, OSError, TypeError, AttributeError) as exc:
            # TypeError/AttributeError: pyserial's socket handler after the socket was closed
            raise LinkDown(f"lost serial port {self.url}: {exc}") from None

    def write(self, data: bytes) -> None:
        ser = self._ser
        if ser is None:
            raise LinkDown(f"serial port {self.url} is not open")
        fd = self._fd
        if fd is not None:
            try:
                n = os.write(fd, data)
            except BlockingIOError:
                n = 0
            except OSError as exc:
                raise LinkDown(f"lost serial port {self.url}: {exc}") from None
            if n == len(data):
                return
            data = data[n:]  # the output buffer is full: pyserial waits for room, up to a limit
        try:
            ser.write(data)
        except serial.SerialTimeoutException:
            raise LinkDown(
                f"serial port {self.url} stopped accepting data (write timed out)"
            ) from None
        except (serial.SerialException, OSError, TypeError, AttributeError) as exc:
            raise LinkDown(f"lost serial port {self.url}: {exc}") from None
