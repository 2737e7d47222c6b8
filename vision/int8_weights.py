"""The classifier's int8 weights in the form this CPU multiplies both exactly and fast.

The quantised classifier is stored with its int8 weights as uint8 about 128
(:func:`vision.training.quantise.unsign_weights`): onnxruntime sums uint8 by uint8 exactly on
every CPU, where uint8 by int8 on an x86 CPU with AVX2 but no VNNI clips pairs of products
to 16 bits and reads some tiles wrong. The exact path is slow, though: on a CPU with VNNI
(``avx512_vnni`` or ``avx_vnni``), whose int8 instructions sum exactly, a 1280x960 table frame
took 35 ms against 24 ms with the same weights signed (``python -m bench.vision_bench
--classifier-weights stored``, then ``signed``). So on such a CPU the recogniser
loads the classifier with its weights signed again: every weight byte and its zero point
moved down by 128 (the same numbers, so the same reads to the bit), patched in place in the
file's bytes. The run-time has no ``onnx`` package, and needs none: the patch changes no
length, so a small protobuf walk finds the bytes to change.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import numpy as np

# onnx.TensorProto.DataType
UINT8 = 2
INT8 = 3

#: /proc/cpuinfo flags of the x86 instructions that sum uint8 x int8 products exactly
EXACT_INT8_FLAGS = frozenset({"avx512_vnni", "avx_vnni"})


def cpu_sums_int8_exactly(cpuinfo: str | None = None) -> bool:
    """Whether this CPU (or the ``/proc/cpuinfo`` text given) has an x86 VNNI instruction
    set. Anything else, an ARM board included, or a system without ``/proc/cpuinfo``, keeps
    the weights as stored."""
    if cpuinfo is None:
        cpuinfo = _this_cpuinfo()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return not EXACT_INT8_FLAGS.isdisjoint(value.split())
    return False


@functools.cache
def _this_cpuinfo() -> str:
    """This machine's /proc/cpuinfo, read once a process (every recogniser asks); empty
    where there is none."""
    try:
        return Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""


def signed_weights(model: bytes) -> bytes | None:
    """``model`` (ONNX bytes) with the uint8 weights of its ``DequantizeLinear`` nodes, and
    their zero points, stored as int8; None when it has none to change. A pair held in a form
    this does not patch (not as raw bytes, or shared with another node) is left as stored.

    Raises ``ValueError`` for bytes that are not a well-formed protobuf."""
    buf = bytearray(model)
    graphs = [(s, e) for f, w, s, e, _ in _fields(buf, 0, len(buf)) if (f, w) == (7, 2)]
    if len(graphs) != 1:
        return None
    start, end = graphs[0]
    tensors: dict[str, tuple[tuple[int, int] | None, tuple[int, int] | None]] = {}
    weights: list[tuple[str, str]] = []
    uses: dict[str, int] = {}
    for field, wire, s, e, _ in _fields(buf, start, end):
        if (field, wire) == (1, 2):  # a node
            op, inputs = _node(buf, s, e)
            for name in inputs:
                uses[name] = uses.get(name, 0) + 1
            if op == "DequantizeLinear" and len(inputs) >= 3:
                weights.append((inputs[0], inputs[2]))
        elif (field, wire) == (5, 2):  # an initializer
            tensor, dtype, raw = _tensor(buf, s, e)
            if tensor is not None:
                tensors[tensor] = (dtype, raw)

    def patchable(name: str) -> bool:
        dtype, raw = tensors[name]
        return dtype is not None and raw is not None and buf[dtype[0]] == UINT8 and uses[name] == 1

    # a weight is an initializer (an activation's DequantizeLinear reads a node's output);
    # a weight or zero point not in raw bytes (a scalar's in int32_data, whose varint would
    # change length) is left as stored: it reads the same either way, only not as fast
    names = {
        n
        for w, z in weights
        if w in tensors and z in tensors and patchable(w) and patchable(z)
        for n in (w, z)
    }
    if not names:
        return None
    for name in names:
        (at, _), (s, e) = tensors[name]  # type: ignore[misc]
        buf[at] = INT8
        buf[s:e] = (np.frombuffer(bytes(buf[s:e]), np.uint8) ^ 0x80).tobytes()
    return bytes(buf)


def _node(buf: bytearray, start: int, end: int) -> tuple[str, list[str]]:
    """A NodeProto's op_type and inputs."""
    op, inputs = "", []
    for field, wire, s, e, _ in _fields(buf, start, end):
        if (field, wire) == (1, 2):
            inputs.append(bytes(buf[s:e]).decode("utf-8", "replace"))
        elif (field, wire) == (4, 2):
            op = bytes(buf[s:e]).decode("utf-8", "replace")
    return op, inputs


def _tensor(
    buf: bytearray, start: int, end: int
) -> tuple[str | None, tuple[int, int] | None, tuple[int, int] | None]:
    """A TensorProto's name, where its data_type's one-byte varint lies and where its raw
    bytes lie (None for either that is absent, or a data_type longer than a byte)."""
    name = dtype = raw = None
    for field, wire, s, e, _ in _fields(buf, start, end):
        if (field, wire) == (8, 2):
            name = bytes(buf[s:e]).decode("utf-8", "replace")
        elif (field, wire) == (2, 0):
            dtype = (s, e) if e - s == 1 else None
        elif (field, wire) == (9, 2):
            raw = (s, e)
    return name, dtype, raw


def _fields(buf: bytearray, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """Each field of the message in ``buf[start:end]``: its number, wire type, where its
    value starts and ends, and a varint's value (a length-delimited one's length)."""
    pos = start
    while pos < end:
        key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, after = _varint(buf, pos, end)
            yield field, wire, pos, after, value
            pos = after
        elif wire == 2:
            size, pos = _varint(buf, pos, end)
            if pos + size > end:
                raise ValueError("a field runs past its message")
            yield field, wire, pos, pos + size, size
            pos += size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > end:
                raise ValueError("a field runs past its message")
            yield field, wire, pos, pos + size, 0
            pos += size
        else:
            raise ValueError(f"wire type {wire} is not protobuf's")


def _varint(buf: bytearray, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("a varint runs past its message")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
