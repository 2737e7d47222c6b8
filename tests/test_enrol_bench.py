"""The enrolment benchmark (``bench.enrol_bench``): its arguments, and how a copy with nothing
to enrol is counted."""

import json

import pytest

from bench import enrol_bench


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--limit", "0"], "--limit must be 1 or more"),
        (["--threads", "0"], "--threads must be 1 or more"),
        (["--json", "/no/such/folder/e.json"], "cannot write /no/such/folder/e.json"),
    ],
)
def test_settings_that_cannot_work_are_refused_at_the_start(argv, said, capsys):
    with pytest.raises(SystemExit) as stop:
        enrol_bench.main(argv)
    assert stop.value.code == 2 and said in capsys.readouterr().err


def test_no_data_is_a_clear_failure(tmp_path, capsys):
    assert enrol_bench.main(["--data", str(tmp_path)]) == 2
    assert "no photos in" in capsys.readouterr().err


def test_a_copy_with_nothing_to_enrol_counts_in_both_columns(shared_data, tmp_path, monkeypatch):
    # its user keeps the trained head: skipped, its siblings weighed less in both columns
    monkeypatch.setattr(enrol_bench, "found_tiles", lambda preds, photo: [])
    out = tmp_path / "e.json"
    assert enrol_bench.main(["--data", str(shared_data), "--limit", "1", "--json", str(out)]) == 0
    results = json.loads(out.read_text())
    trained, enrolled = results["trained head"], results["enrolled head"]
    assert trained["tiles"] == enrolled["tiles"] and trained["tiles"]["tiles"] > 0
