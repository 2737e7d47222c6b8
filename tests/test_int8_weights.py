"""The classifier's weights loaded signed where the CPU sums int8 exactly: the same numbers,
patched in the file's bytes, and the same reads."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.errors import ModelError
from vision import int8_weights
from vision.int8_weights import INT8, UINT8, cpu_sums_int8_exactly, signed_weights
from vision.recognizer import DEFAULT_MODEL_DIR, TileRecognizer

CLASSIFIER = DEFAULT_MODEL_DIR / "classifier.onnx"

X86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 {}\nbugs\t\t:\n"
ARM = "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd asimddp\nCPU part\t: 0xd0b\n"


@pytest.mark.parametrize(
    ("cpuinfo", "exact"),
    [
        (X86.format("avx512f avx512_vnni"), True),
        (X86.format("avx_vnni"), True),
        (X86.format("avx512f"), False),  # AVX2/AVX-512 without VNNI clips: keep the stored
        (ARM, False),  # not measured on ARM: keep the stored
        ("", False),
    ],
)
def test_only_an_x86_cpu_with_vnni_sums_int8_exactly(cpuinfo, exact):
    assert cpu_sums_int8_exactly(cpuinfo) is exact


def test_signing_moves_each_weight_and_its_zero_point_down_by_128_and_nothing_else():
    onnx = pytest.importorskip("onnx", reason="the train extra (onnx) is not installed")
    from onnx import numpy_helper

    stored = onnx.load(str(CLASSIFIER))
    patched_bytes = signed_weights(CLASSIFIER.read_bytes())
    assert patched_bytes is not None and len(patched_bytes) == CLASSIFIER.stat().st_size
    patched = onnx.load_from_string(patched_bytes)
    before = {t.name: t for t in stored.graph.initializer}
    after = {t.name: t for t in patched.graph.initializer}
    assert before.keys() == after.keys()
    moved = 0
    for name, tensor in after.items():
        old = before[name]
        if tensor.data_type == INT8:
            assert old.data_type == UINT8
            signed = numpy_helper.to_array(tensor).astype(np.int16)
            assert np.array_equal(signed, numpy_helper.to_array(old).astype(np.int16) - 128)
            moved += 1
        else:
            assert tensor == old
    # every convolution's and the head's weights with their zero points (two tensors each)
    assert moved >= 2 * 10 and moved % 2 == 0
    assert [n for n in patched.graph.node] == [n for n in stored.graph.node]


def test_signed_weights_read_alike_where_they_are_used():
    rng = np.random.default_rng(1)
    crops = rng.uniform(0, 1, (64, 3, 48, 48)).astype(np.float32)
    stored = TileRecognizer(signed_weights=False)
    assert stored.classifier_weights == "as stored"
    if cpu_sums_int8_exactly():
        signed = TileRecognizer(signed_weights=True)
        assert signed.classifier_weights == "signed"
        name = stored._classifier.get_inputs()[0].name
        for a, b in zip(
            stored._classifier.run(None, {name: crops}),
            signed._classifier.run(None, {name: crops}),
            strict=True,
        ):
            assert np.array_equal(a, b)  # to the bit
    else:  # a CPU that would clip signed sums never loads them unasked
        assert TileRecognizer().classifier_weights == "as stored"


def test_the_default_follows_the_cpu(monkeypatch):
    monkeypatch.setattr(int8_weights, "cpu_sums_int8_exactly", lambda cpuinfo=None: True)
    assert TileRecognizer().classifier_weights == "signed"
    monkeypatch.setattr(int8_weights, "cpu_sums_int8_exactly", lambda cpuinfo=None: False)
    assert TileRecognizer().classifier_weights == "as stored"


def test_a_model_without_int8_weights_is_left_as_it_is():
    assert signed_weights((DEFAULT_MODEL_DIR / "finder.onnx").read_bytes()) is None


def test_a_corrupt_classifier_is_a_model_error_either_way(tmp_path):
    import shutil

    model = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL_DIR, model)
    data = (model / "classifier.onnx").read_bytes()
    (model / "classifier.onnx").write_bytes(data[: len(data) // 3])
    for signed in (True, False):
        with pytest.raises(ModelError, match="corrupt or not ONNX"):
            TileRecognizer(model, signed_weights=signed)


@functools.cache
def _stored() -> bytes:
    return CLASSIFIER.read_bytes()


def _signed_or_refused(data: bytes) -> bytes | str | None:
    try:
        return signed_weights(data)
    except ValueError:
        return "refused"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=8))
def test_damaged_bytes_are_refused_or_left_never_a_crash(noise, at, patch):
    out = _signed_or_refused(noise)
    assert out in (None, "refused") or (isinstance(out, bytes) and len(out) == len(noise))
    data = bytearray(_stored())
    at %= len(data)
    data[at : at + len(patch)] = patch
    out = _signed_or_refused(bytes(data))
    assert out in (None, "refused") or (isinstance(out, bytes) and len(out) == len(data))
