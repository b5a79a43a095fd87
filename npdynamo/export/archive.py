"""The export archive on disk: one zip holding a JSON manifest and ``.npy`` tensors.

``ExportedProgram.save`` hands this module a manifest (the program as schema data, see
``schema.py`` and ``docs/export.md``) and its tensors; ``npdynamo.load`` gets them back. Reading
is defensive, since an archive may come from anywhere: nothing in it is executed (no pickle:
``np.load(allow_pickle=False)``; no ``eval``), every member is size-checked before it is read
(an ``.npy`` header's shape must match the bytes that follow, so a header claiming a huge shape
cannot make the loader allocate), only allow-listed dtypes are accepted, and every failure is
an ``ArchiveError`` naming the file.

Layout (version 1)::

    npdynamo-export.json     {"format": "npdynamo-export", "version": 1, "program": {...}}
    tensors/<name>.npy       one array per constant (NumPy's .npy format, no object dtypes)
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
import zlib
from typing import Any

import numpy as np

from npdynamo.export.schema import DTYPES, ArchiveError

FORMAT = "npdynamo-export"
FORMAT_VERSION = 1
MANIFEST = "npdynamo-export.json"
#: limits on what a loader reads (a hostile archive must not exhaust memory)
MAX_MANIFEST_BYTES = 64 << 20
MAX_TENSOR_BYTES = 8 << 30
MAX_MEMBERS = 100_000


def write(path: str | os.PathLike, program: dict, tensors: dict[str, np.ndarray]) -> None:
    """Write the archive atomically (a temporary file renamed over ``path``)."""
    manifest = {"format": FORMAT, "version": FORMAT_VERSION, "program": program}
    text = json.dumps(manifest, indent=1, allow_nan=False)
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST, text)
        for name, array in tensors.items():
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
            zf.writestr(f"tensors/{name}.npy", buf.getvalue())
    os.replace(tmp, path)


def read(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """The manifest's program and the tensors of the archive at ``path``."""
    where = os.fspath(path)
    try:
        with zipfile.ZipFile(where) as zf:
            return _read(zf, where)
    except ArchiveError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError,
            UnicodeDecodeError, NotImplementedError, RuntimeError, KeyError, RecursionError,
            TypeError, AttributeError, IndexError, zlib.error) as exc:
        raise ArchiveError(f"{where} is not a readable npdynamo export archive: "
                           f"{type(exc).__name__}: {exc}") from None


def _read(zf: zipfile.ZipFile, where: str) -> tuple[dict, dict[str, np.ndarray]]:
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ArchiveError(f"{where}: too many members")
    members = {info.filename: info for info in infos}
    info = members.get(MANIFEST)
    if info is None:
        raise ArchiveError(f"{where} is not an npdynamo export archive (no {MANIFEST})")
    if info.file_size > MAX_MANIFEST_BYTES:
        raise ArchiveError(f"{where}: the manifest is too large")
    try:
        manifest = json.loads(zf.read(info).decode("utf-8"), parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ArchiveError(f"{where}: the manifest is not valid JSON: {exc}") from None
    if type(manifest) is not dict or manifest.get("format") != FORMAT:
        raise ArchiveError(f"{where} is not an npdynamo export archive")
    version = manifest.get("version")
    if type(version) is not int or version < 1:
        raise ArchiveError(f"{where}: bad format version {version!r}")
    if version > FORMAT_VERSION:
        raise ArchiveError(f"{where} was written by a newer npdynamo (archive format version "
                           f"{version}; this one reads up to {FORMAT_VERSION}): upgrade npdynamo")
    program = manifest.get("program")
    if type(program) is not dict:
        raise ArchiveError(f"{where}: the manifest has no program")
    tensors = {}
    for name, info in members.items():
        if name == MANIFEST:
            continue
        if not (name.startswith("tensors/") and name.endswith(".npy")) or info.is_dir():
            raise ArchiveError(f"{where}: unexpected member {name!r}")
        tensors[name[len("tensors/"):-len(".npy")]] = _tensor(zf, info, where)
    return program, tensors


def _no_constant(text: str) -> Any:
    raise ArchiveError(f"the manifest holds the non-standard JSON constant {text}")


def _tensor(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> np.ndarray:
    if info.file_size > MAX_TENSOR_BYTES:
        raise ArchiveError(f"{where}: tensor {info.filename} is too large")
    data = zf.read(info)  # the size is checked (and the CRC) before any array is made
    buf = io.BytesIO(data)
    try:
        major, _minor = np.lib.format.read_magic(buf)
        if major == 1:
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(buf)
        elif major in (2, 3):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(buf)
        else:
            raise ArchiveError(f"{where}: tensor {info.filename}: unknown .npy version {major}")
    except ArchiveError:
        raise
    except Exception as exc:
        raise ArchiveError(f"{where}: tensor {info.filename} has a bad header: {exc}") from None
    if dtype.name not in DTYPES or dtype.hasobject:
        raise ArchiveError(f"{where}: tensor {info.filename} has dtype {dtype}, not allowed")
    if any(type(d) is not int or d < 0 for d in shape) or len(shape) > 64:
        raise ArchiveError(f"{where}: tensor {info.filename} has a bad shape {shape}")
    if math.prod(shape) * dtype.itemsize != len(data) - buf.tell():
        raise ArchiveError(f"{where}: tensor {info.filename}: its header says shape {shape} "
                           f"of {dtype}, which does not match its {len(data) - buf.tell()} bytes")
    buf.seek(0)
    array = np.load(buf, allow_pickle=False)
    return np.array(array, order="F" if fortran else "C", copy=True)
