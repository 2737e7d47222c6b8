"""The dashboard's load bench (bench/web_bench.py): how it matches each page's frames to the
events the controller emitted, and its arguments. The bench itself runs the whole table and
is run by hand (docs/benchmarks.md)."""

from __future__ import annotations

import json

import pytest

from bench import web_bench


def frame(t: float, kind: str, data: dict) -> list:
    return [t, kind, json.dumps(data, indent=1)]  # spaced as the server likes: no matter


def test_each_event_is_matched_to_its_frame_on_every_page() -> None:
    a = {"type": "phase", "phase": "playing", "time": 1.0}
    b = {"type": "seat_seen", "seat": 1, "time": 2.0}
    emitted = [(10.0, "phase", web_bench.canonical(a)), (11.0, "seat_seen", web_bench.canonical(b))]
    pages = [
        [
            frame(9.0, "snapshot", {"seq": 1}),
            frame(10.002, "phase", a),
            frame(11.010, "seat_seen", b),
        ],
        [frame(10.004, "phase", a), frame(11.001, "seat_seen", b)],
    ]
    delays, missed = web_bench.match_delays(emitted, pages)
    assert missed == 0
    assert [round(d, 3) for d in delays] == [2.0, 10.0, 4.0, 1.0]


def test_an_event_emitted_twice_is_matched_in_order_and_a_lost_frame_counted() -> None:
    a = {"type": "seat_seen", "seat": 1, "time": 2.0}
    emitted = [(10.0, "seat_seen", web_bench.canonical(a))] * 2
    # the second emission came 5 ms after the first, whose frame arrived 3 ms after it
    emitted = [emitted[0], (10.005, "seat_seen", web_bench.canonical(a))]
    pages = [
        [frame(10.003, "seat_seen", a), frame(10.006, "seat_seen", a)],
        [frame(10.004, "seat_seen", a)],
    ]
    delays, missed = web_bench.match_delays(emitted, pages)
    assert [round(d, 3) for d in delays] == [3.0, 1.0, 4.0]
    assert missed == 1


def test_percentile() -> None:
    values = [float(v) for v in range(1, 101)]
    assert web_bench.percentile(values, 0.5) == 51.0
    assert web_bench.percentile(values, 0.95) == 96.0
    assert web_bench.percentile([7.0], 0.95) == 7.0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--pages", "0"], "--pages: 1 to 24"),
        (["--pages", "25"], "--pages: 1 to 24"),
        (["--hands", "0"], "--hands: at least 1"),
    ],
)
def test_bad_arguments_are_refused(
    args: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        web_bench.main(args)
    assert stop.value.code == 2
    # refused before any page is opened: nothing measured, one line saying what is wrong
    out, err = capsys.readouterr()
    assert out == "" and f"error: {words}" in err.splitlines()[-1]
