"""Writing a file whole or not at all (vision/files.py)."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.files import png_dpi, shown, write_picture, write_text_atomically


def test_a_file_is_written_whole_and_readable_by_the_tables_service(tmp_path: Path) -> None:
    path = write_text_atomically(tmp_path / "a" / "b.json", "{}\n", make_folder=True)
    assert path.read_text() == "{}\n" and path.stat().st_mode & 0o777 == 0o644
    path.chmod(0o640)
    write_text_atomically(path, "[]\n")  # a file replaced keeps its permissions
    assert path.read_text() == "[]\n" and path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in path.parent.iterdir()) == ["b.json"]


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "c.json"
    path.write_text("old")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_text_atomically(path, "new")
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["c.json"]
    with pytest.raises(FileNotFoundError):  # no folder made unless asked
        write_text_atomically(tmp_path / "none" / "d.json", "x")


def test_a_folder_is_checked_for_taking_files_without_keeping_one(tmp_path: Path) -> None:
    from vision.files import check_folder_takes_files

    check_folder_takes_files(tmp_path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OSError):
        check_folder_takes_files(tmp_path / "none")


def test_why_a_path_cannot_be_written_is_told_without_making_it(tmp_path: Path) -> None:
    from vision.files import why_not_writable

    assert why_not_writable(tmp_path / "out.json") is None
    assert why_not_writable(tmp_path) == "it is a folder"
    assert why_not_writable(tmp_path / "none" / "out.json") == "no such folder"
    assert list(tmp_path.iterdir()) == []


def test_a_picture_is_written_whole_with_its_print_resolution(tmp_path: Path) -> None:
    picture = np.zeros((30, 40, 3), np.uint8)
    picture[:, :20] = (0, 0, 255)
    path = write_picture(tmp_path / "p.png", picture, dpi=300)
    np.testing.assert_array_equal(cv2.imread(str(path)), picture)
    assert png_dpi(path.read_bytes()) == pytest.approx(300, abs=0.1)
    assert png_dpi(cv2.imencode(".png", picture)[1].tobytes()) is None
    assert (path.stat().st_mode & 0o777) == 0o644
    assert cv2.imread(str(write_picture(tmp_path / "p.jpg", picture))).shape == (30, 40, 3)
    with pytest.raises(ValueError, match=r"cannot write a picture as 'p\.gif'"):
        write_picture(tmp_path / "p.gif", picture)
    with pytest.raises(ValueError, match="not a picture"):
        write_picture(tmp_path / "q.png", np.zeros((0, 3), np.uint8))
    (tmp_path / "dir.png").mkdir()
    with pytest.raises(OSError):
        write_picture(tmp_path / "dir.png", picture)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.png", "p.jpg", "p.png"]


def test_names_are_shown_whatever_their_bytes() -> None:
    assert shown(os.fsdecode(b"caf\xe9.png")) == "caf\\xe9.png"
    assert shown("中文.png") == "中文.png" and shown(Path("a/b.png")) == "a/b.png"
