"""Wheels made by hand, for environments built offline: tiny packages, and the
distributions of the running pytest as wheels (so an environment can list ``pytest``)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Mapping
from importlib.metadata import Distribution
from pathlib import Path


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(
    folder: Path,
    name: str,
    version: str,
    files: Mapping[str, str | bytes],
    entry_points: str = "",
    requires: tuple[str, ...] = (),
) -> Path:
    """``name-version-py3-none-any.whl`` in ``folder`` holding ``files`` (path -> text)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    contents: dict[str, bytes] = {
        path: text.encode() if isinstance(text, str) else text for path, text in files.items()
    }
    contents[f"{info}/METADATA"] = metadata.encode()
    contents[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    if entry_points:
        contents[f"{info}/entry_points.txt"] = entry_points.encode()
    record = [_record_line(p, d) for p, d in contents.items()] + [f"{info}/RECORD,,"]
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
    return wheel


def wheel_of(dist: Distribution, folder: Path) -> Path:
    """An installed pure-Python distribution as a wheel again (its files in the site
    folder, its metadata; scripts and bytecode left out)."""
    files: dict[str, str | bytes] = {}
    info = ""
    for entry in dist.files or ():
        parts = Path(entry).parts
        if ".." in parts or "__pycache__" in parts:
            continue
        if parts[0].endswith(".dist-info"):
            info = parts[0]
            if parts[-1] in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
        source = Path(str(dist.locate_file(entry)))
        if source.is_file():
            files[str(entry)] = source.read_bytes()
    name, version = info[: -len(".dist-info")].rsplit("-", 1)
    # METADATA as installed (its dependencies); the rest of the dist-info too
    metadata = files.pop(f"{info}/METADATA")
    files.pop(f"{info}/WHEEL", None)
    wheel = write_wheel(folder, name, version, files)
    _replace(wheel, f"{info}/METADATA", metadata if isinstance(metadata, bytes) else b"")
    return wheel


def _replace(wheel: Path, member: str, data: bytes) -> None:
    """``member`` of ``wheel`` made ``data`` (its RECORD line updated)."""
    with zipfile.ZipFile(wheel) as archive:
        contents = {i.filename: archive.read(i) for i in archive.infolist()}
    contents[member] = data
    record = next(p for p in contents if p.endswith("/RECORD"))
    lines = [_record_line(p, d) for p, d in contents.items() if p != record]
    contents[record] = ("\n".join([*lines, f"{record},,"]) + "\n").encode()
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data_ in contents.items():
            archive.writestr(path, data_)
