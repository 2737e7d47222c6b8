"""The serial port wrapper over a real pty: exclusive open, clear open errors, unplug."""

from __future__ import annotations

import os
import socket
import threading
import tty

import pytest

from firmware_bridge.errors import LinkDown
from firmware_bridge.serial_port import Backoff, SerialPort


class Pty:
    """A pty pair for a test: unpacks as ``(master, path of the slave, slave)``; ``close()``
    closes both ends once, however often it is called. A test that unplugs the port closes
    them through it, so the fixture does not close the same numbers again: by then another
    file of the process may hold them (a test server's waitress pipe was closed so once)."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self.open = True

    def __iter__(self):
        return iter((self.master, self.path, self.slave))

    def close(self) -> None:
        if self.open:
            self.open = False
            os.close(self.master)
            os.close(self.slave)


@pytest.fixture
def pty():
    ends = Pty()
    yield ends
    ends.close()


def test_read_and_write_over_a_pty(pty) -> None:
    master, path, _ = pty
    port = SerialPort(path, read_timeout=0.05)
    port.open()
    assert port.is_open
    port.write(b"hello")
    assert os.read(master, 100) == b"hello"
    os.write(master, b"world" * 100)
    got = b""
    while len(got) < 500:
        got += port.read()
    assert got == b"world" * 100
    assert port.read() == b""  # nothing there: returns after its timeout
    port.close()
    assert not port.is_open
    port.close()  # twice is fine


def test_read_takes_its_own_timeout(pty) -> None:
    master, path, _ = pty
    port = SerialPort(path, read_timeout=30.0)
    port.open()
    assert port.read(0) == b""  # nothing there: does not wait the port's 30 s
    os.write(master, b"abc")
    got = b""
    while len(got) < 3:
        got += port.read(5.0)
    assert got == b"abc"
    port.close()


def test_a_write_larger_than_the_line_buffer_goes_out_whole(pty) -> None:
    # the pty takes only a few kB at a time: the rest waits for room (pyserial's write)
    master, path, _ = pty
    port = SerialPort(path, write_timeout=30.0)
    port.open()
    data = bytes(range(256)) * 1024
    got = bytearray()

    def drain() -> None:
        while len(got) < len(data):
            got.extend(os.read(master, 65536))

    t = threading.Thread(target=drain, daemon=True)
    t.start()
    port.write(data)
    t.join(timeout=30)
    assert bytes(got) == data
    port.close()


def test_exclusive(pty) -> None:
    _, path, _ = pty
    a = SerialPort(path)
    a.open()
    b = SerialPort(path)
    with pytest.raises(LinkDown, match="in use by another program"):
        b.open()
    a.close()
    b.open()
    b.close()


def test_missing_device_is_explained(tmp_path) -> None:
    with pytest.raises(LinkDown, match=r"does not exist.*plugged in"):
        SerialPort(str(tmp_path / "ttyACM9")).open()


def test_refused_socket_is_explained() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    with pytest.raises(LinkDown, match="nothing is listening"):
        SerialPort(f"socket://127.0.0.1:{free}").open()


def test_unplug_raises_link_down(pty) -> None:
    _, path, _ = pty
    port = SerialPort(path, read_timeout=0.05)
    port.open()
    pty.close()
    with pytest.raises(LinkDown, match="lost serial port"):
        for _ in range(100):
            port.read()
    port.close()


def test_use_before_open() -> None:
    port = SerialPort("/dev/null")
    with pytest.raises(LinkDown, match="not open"):
        port.read()
    with pytest.raises(LinkDown, match="not open"):
        port.write(b"x")


def test_backoff_doubles_to_its_cap() -> None:
    b = Backoff(0.05, 0.3)
    assert [b.next() for _ in range(5)] == [0.05, 0.1, 0.2, 0.3, 0.3]
    b.reset()
    assert b.next() == 0.05
