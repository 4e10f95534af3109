"""Registry packages as benchmark corpora: downloaded with the registries' ordinary clients (pip, npm, apt-get) and
unpacked one directory per archive. One place, so that the cut simulation and the real-code benchmark fetch and lay
out their corpora the same way (`dest/dl` the archives, `dest/src/<archive name>` what they hold)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

#: Per language, the (client, package) pairs to fetch; client is "pip", "npm" or "apt".
Packages = dict[str, tuple[tuple[str, str], ...]]


def download_command(client: str, package: str, downloads: Path) -> list[str]:
    """The registry client's own download command for one package (pip: a wheel, no dependencies)."""
    return {"pip": [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                    "-d", str(downloads), package],
            "npm": ["npm", "pack", "-q", "--pack-destination", str(downloads), package],
            "apt": ["apt-get", "download", package]}[client]


def unpack(archive: Path, target: Path) -> None:
    """Unpack a wheel, an npm tarball or a Debian package into `target` (other files are left alone)."""
    if archive.suffix == ".whl":
        zipfile.ZipFile(archive).extractall(target)
    elif archive.name.endswith(".tgz"):
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
    elif archive.suffix == ".deb":
        subprocess.run(["dpkg-deb", "-x", str(archive), str(target)], check=True)


def fetch_packages(packages: Packages, dest: Path) -> None:
    """Download every package into dest/dl, then unpack each archive not unpacked yet under dest/src."""
    downloads = dest / "dl"
    downloads.mkdir(parents=True, exist_ok=True)
    for language, entries in packages.items():
        for client, package in entries:
            command = download_command(client, package, downloads)
            print(f"{language}: {' '.join(command)}", file=sys.stderr)
            subprocess.run(command, check=True, cwd=downloads)
    for archive in sorted(downloads.iterdir()):
        target = dest / "src" / archive.name
        if not target.exists():
            target.mkdir(parents=True)
            unpack(archive, target)
