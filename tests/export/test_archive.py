"""ep.save / npdynamo.load: a versioned zip of JSON + .npy, read back in a fresh process that
never imports the capture stage, run on eager and numba; damaged, truncated, hostile and
future-version archives raise ArchiveError and nothing else (fuzzed)."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npdynamo
from npdynamo.export import ArchiveError, ExportedProgram
from tests.differential import assert_same_value
from tests.export.workloads import BY_NAME, WORKLOADS, assert_close, copies

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_fresh_process_loads_and_runs_every_workload_without_capture(tmp_path):
    paths, expected = [], {}
    for work in WORKLOADS:
        path = str(tmp_path / f"{work.name}.npdx")
        work.export().save(path)
        args = work.args(7, seed=11)
        np.savez(path + ".inputs.npz", **{f"a{i}": a for i, a in enumerate(args)})
        plain = copies(args)
        expected[path] = (work.fn(*plain), list(plain))
        paths.append(path)
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-m", "tests.export.run_loaded", *paths], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "capture imported: False" in done.stdout
    for path, plain in expected.items():
        with open(path + ".outputs.pkl", "rb") as f:
            got = pickle.load(f)  # noqa: S301 (written by the test's own subprocess)
        assert_same_value(plain, got["eager"], path)  # the result, then the arguments after
        assert_close(plain, got["numba"], f64=1e-9)


def test_round_trip_keeps_spec_and_printout(tmp_path):
    ep = BY_NAME["sgd_step"].export()
    ep.save(tmp_path / "a.npdx")
    back = npdynamo.load(tmp_path / "a.npdx")
    assert isinstance(back, ExportedProgram)
    assert str(back) == str(ep)
    with zipfile.ZipFile(tmp_path / "a.npdx") as zf:
        names = zf.namelist()
        manifest = json.loads(zf.read("npdynamo-export.json"))
    assert names[0] == "npdynamo-export.json"
    assert manifest["format"] == "npdynamo-export" and manifest["version"] == 1
    mlp = BY_NAME["mlp_predict"].export()
    mlp.save(tmp_path / "m.npdx")
    with zipfile.ZipFile(tmp_path / "m.npdx") as zf:
        assert sorted(zf.namelist())[1:] == ["tensors/k_B1.npy", "tensors/k_W1.npy",
                                             "tensors/k_W2.npy"]


# -- hostile archives ----------------------------------------------------------------------------
def _archive(work: str, tmp_path) -> bytes:
    path = tmp_path / f"{work}.npdx"
    BY_NAME[work].export().save(path)
    return path.read_bytes()


def _rezip(data: bytes, manifest=None, extra: dict | None = None) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name in src.namelist():
            if name in (extra or {}):  # replaced
                continue
            body = src.read(name)
            if name == "npdynamo-export.json" and manifest is not None:
                body = json.dumps(manifest).encode()
            zf.writestr(name, body)
        for name, body in (extra or {}).items():
            zf.writestr(name, body)
    return out.getvalue()


def _load_bytes(tmp_path, data: bytes, name: str = "fuzz.npdx"):
    path = tmp_path / name
    path.write_bytes(data)
    try:
        return npdynamo.load(path)
    except ArchiveError:
        return None  # the only error a loader may raise


class _Good(dict):
    def __repr__(self) -> str:  # hypothesis prints its arguments: not the archives' bytes
        return "<good archives>"


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("good")
    return _Good({w: _archive(w, tmp) for w in ("mlp_predict", "branch", "rolled")})


def test_future_version_and_not_an_archive(tmp_path, good):
    data = good["mlp_predict"]
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("npdynamo-export.json"))
    manifest["version"] = 2
    (tmp_path / "v2.npdx").write_bytes(_rezip(data, manifest))
    with pytest.raises(ArchiveError, match="newer npdynamo .*version 2"):
        npdynamo.load(tmp_path / "v2.npdx")
    (tmp_path / "x.npdx").write_bytes(b"not a zip")
    with pytest.raises(ArchiveError, match="not a readable npdynamo export archive"):
        npdynamo.load(tmp_path / "x.npdx")
    with pytest.raises(ArchiveError):
        npdynamo.load(tmp_path / "missing.npdx")


def test_unknown_op_pickle_and_huge_shapes_are_refused(tmp_path, good):
    data = good["mlp_predict"]
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("npdynamo-export.json"))
    evil = json.loads(json.dumps(manifest))
    calls = [n for n in evil["program"]["graph"]["nodes"] if n["op"] == "call_function"]
    calls[0]["target"] = "os.system"
    (tmp_path / "op.npdx").write_bytes(_rezip(data, evil))
    with pytest.raises(ArchiveError, match="unknown op 'os.system'"):
        npdynamo.load(tmp_path / "op.npdx")
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "p.npdx").write_bytes(_rezip(data, extra={"tensors/k_X.npy": pickled.getvalue()}))
    with pytest.raises(ArchiveError, match="dtype object, not allowed"):
        npdynamo.load(tmp_path / "p.npdx")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10**12, 10**6)})
    (tmp_path / "h.npdx").write_bytes(_rezip(data, extra={"tensors/k_Y.npy": header.getvalue()}))
    with pytest.raises(ArchiveError, match="does not match its 0 bytes"):
        npdynamo.load(tmp_path / "h.npdx")
    (tmp_path / "e.npdx").write_bytes(_rezip(data, extra={"code.py": b"import os"}))
    with pytest.raises(ArchiveError, match="unexpected member 'code.py'"):
        npdynamo.load(tmp_path / "e.npdx")


_SETTINGS = settings(max_examples=150, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(data=st.data())
def test_fuzz_bytes(tmp_path, good, data):
    which = data.draw(st.sampled_from(sorted(good)))
    raw = bytearray(good[which])
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        for _ in range(data.draw(st.integers(1, 8))):
            at = data.draw(st.integers(0, len(raw) - 1))
            raw[at] ^= data.draw(st.integers(1, 255))
    _load_bytes(tmp_path, bytes(raw))


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.text(max_size=8)
    | st.sampled_from(["add", "getitem", "cond", "s0", "float64", "node", "sym", "tensor"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["node", "sym", "tuple", "dict", "graph", "shape", "dtype", "s", "op",
                         "out", "float", "tensor", "slice", "name", "args", "nodes"]),
        inner, max_size=3),
    max_leaves=12)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


@_SETTINGS
@given(data=st.data())
def test_fuzz_manifest(tmp_path, good, data):
    which = data.draw(st.sampled_from(sorted(good)))
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(good[which])).read("npdynamo-export.json"))
    paths = list(_paths(manifest))[1:]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        target = manifest
        try:
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = data.draw(_json)
        except (KeyError, IndexError, TypeError):
            continue
    ep = _load_bytes(tmp_path, _rezip(good[which], manifest))
    if ep is not None:
        str(ep)  # a program that loads is a well-formed one


def _tensor_members(data: bytes) -> list[str]:
    return sorted(n for n in zipfile.ZipFile(io.BytesIO(data)).namelist()
                  if n.startswith("tensors/"))


_DESCRS = ["<f8", "<f4", ">f8", "|b1", "<i8", "|u1", "<c16", "|O", "<U3", "V8", "<M8[s]", "f8"]


@_SETTINGS
@given(data=st.data())
def test_fuzz_tensor_members(tmp_path, good, data):
    """The .npy members themselves damaged inside a well-formed zip (stored, so the CRC holds
    and the bytes reach the loader): flipped and cut bytes, headers claiming other dtypes,
    orders and shapes (oversized ones included)."""
    raw = good["mlp_predict"]
    name = data.draw(st.sampled_from(_tensor_members(raw)))
    body = bytearray(zipfile.ZipFile(io.BytesIO(raw)).read(name))
    how = data.draw(st.sampled_from(["flip", "cut", "header"]))
    if how == "flip":
        for _ in range(data.draw(st.integers(1, 6))):
            at = data.draw(st.integers(0, len(body) - 1))
            body[at] ^= data.draw(st.integers(1, 255))
    elif how == "cut":
        body = body[:data.draw(st.integers(0, len(body) - 1))]
    else:
        header = io.BytesIO()
        shape = tuple(data.draw(st.lists(st.one_of(st.integers(0, 40), st.integers(0, 2**62)),
                                         max_size=4)))
        np.lib.format.write_array_header_1_0(header, {
            "descr": data.draw(st.sampled_from(_DESCRS)), "shape": shape,
            "fortran_order": data.draw(st.booleans())})
        payload = data.draw(st.binary(max_size=256))
        body = bytearray(header.getvalue() + payload)
    ep = _load_bytes(tmp_path, _rezip(raw, extra={name: bytes(body)}))
    if ep is not None:  # a tensor that loads has the dtype and shape the program declares
        for spec in ep.inputs:
            if spec.kind == "constant":
                c = ep.constants[spec.name]
                assert c.dtype == spec.meta.dtype and c.shape == spec.meta.shape


@pytest.mark.parametrize("change", [
    {"version": 0}, {"version": -1}, {"version": "1"}, {"version": None}, {"version": 1.5},
    {"version": 10**30}, {"format": "npdynamo-exported"}, {"format": None}, {"program": []},
])
def test_wrong_versions_and_formats(tmp_path, good, change):
    data = good["branch"]
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("npdynamo-export.json"))
    manifest.update(change)
    with pytest.raises(ArchiveError):
        npdynamo.load(_write(tmp_path, _rezip(data, manifest)))


def _write(tmp_path, data: bytes):
    path = tmp_path / "changed.npdx"
    path.write_bytes(data)
    return path
