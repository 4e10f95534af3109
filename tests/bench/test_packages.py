"""The benchmark corpora's fetching: the registry clients' commands and how archives are unpacked (no download)."""

from __future__ import annotations

import io
import sys
import tarfile
import zipfile
from pathlib import Path

from bench.common.packages import download_command, fetch_packages


def test_download_commands_are_the_registry_clients_own(tmp_path: Path) -> None:
    assert download_command("pip", "attrs", tmp_path) == [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q", "-d", str(tmp_path),
        "attrs"]
    assert download_command("npm", "ms", tmp_path) == ["npm", "pack", "-q", "--pack-destination", str(tmp_path), "ms"]
    assert download_command("apt", "golang-1.22-src", tmp_path) == ["apt-get", "download", "golang-1.22-src"]


def test_archives_are_unpacked_once_each_under_src(tmp_path: Path) -> None:
    downloads = tmp_path / "dl"
    downloads.mkdir()
    with zipfile.ZipFile(downloads / "pkg-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("pkg/__init__.py", "x = 1\n")
    data = b"module.exports = 1;\n"
    with tarfile.open(downloads / "ms-2.1.3.tgz", "w:gz") as tar:
        info = tarfile.TarInfo("package/index.js")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (downloads / "notes.txt").write_text("not an archive\n")
    fetch_packages({}, tmp_path)
    src = tmp_path / "src"
    assert (src / "pkg-1.0-py3-none-any.whl" / "pkg" / "__init__.py").read_text() == "x = 1\n"
    assert (src / "ms-2.1.3.tgz" / "package" / "index.js").read_bytes() == data
    assert list((src / "notes.txt").iterdir()) == []
    # An archive already unpacked is left as it is (an edit there survives the next fetch).
    (src / "pkg-1.0-py3-none-any.whl" / "pkg" / "__init__.py").write_text("edited\n")
    fetch_packages({}, tmp_path)
    assert (src / "pkg-1.0-py3-none-any.whl" / "pkg" / "__init__.py").read_text() == "edited\n"
