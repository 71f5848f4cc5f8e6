"""doctor's model line for the embedded model says what is true: `ok` only once the 1.1 GB file
is in the person's cache, else when it will be assembled and the command that does it now;
`fixloop-tui model fetch` is that command, reusing the verified file the first run would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.doctor import check_model
from engine.model.local.weights import MODEL_FILENAME, MODEL_SHA256, MODEL_SIZE

REPO = Path(__file__).parents[2]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No model configured anywhere; the person's cache in tmp_path: its models directory."""
    monkeypatch.delenv("FIXLOOP_MODEL", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "fixloop" / "models"


def joined_file(models: Path) -> Path:
    """A file of the model's size (sparse: no 1.1 GB written) and the stamp a verified join
    leaves beside it."""
    models.mkdir(parents=True)
    path = models / MODEL_FILENAME
    with path.open("wb") as out:
        out.truncate(MODEL_SIZE)
    info = path.stat()
    (models / f"{MODEL_FILENAME}.sha256").write_text(
        f"{MODEL_SHA256} {info.st_size} {info.st_mtime_ns}\n"
    )
    return path


def test_the_embedded_model_is_not_ok_before_its_file_exists(tmp_path: Path, cache: Path) -> None:
    check = check_model(tmp_path)
    assert (check.ok, check.needed) == (False, False)
    assert "will be assembled on first use (1.1 GB" in check.detail
    assert str(cache) in check.detail
    assert check.fix == "fixloop-tui model fetch"


def test_the_embedded_model_turns_ok_once_its_file_is_in_the_cache(
    tmp_path: Path, cache: Path
) -> None:
    assert not check_model(tmp_path).ok
    joined_file(cache)
    check = check_model(tmp_path)
    assert check.ok
    assert check.detail == "local/qwen2.5-coder-1.5b (embedded)"


def test_a_half_joined_file_is_not_the_model(tmp_path: Path, cache: Path) -> None:
    cache.mkdir(parents=True)
    (cache / MODEL_FILENAME).write_bytes(b"GGUF")
    assert not check_model(tmp_path).ok


def test_model_fetch_prints_the_verified_file_it_reuses(tmp_path: Path, cache: Path) -> None:
    path = joined_file(cache)
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "model", "fetch"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "PYTHONPATH": str(REPO),
        },
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(path)
    assert "assembling the embedded model (1.1 GB)" in done.stderr
