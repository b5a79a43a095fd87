"""``user_lines.user_module``: the module a code object's file belongs to (its warnings registry
and ``__name__`` make a compiled function's warnings behave as the plain program's), found also
through a symlink; and found without a ``realpath`` per loaded module on every capture."""

import importlib
import os
import sys
import types

import pytest

from npdynamo.fx import user_lines

_MODULE = "def f(x):\n    return x\n"


@pytest.fixture
def module_file(tmp_path, monkeypatch):
    """A module imported from ``tmp_path``, and a symlink to its file."""
    (tmp_path / "npd_user_lines_target.py").write_text(_MODULE)
    os.symlink(tmp_path / "npd_user_lines_target.py", tmp_path / "link.py")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("npd_user_lines_target")
    yield module, str(tmp_path / "link.py")
    sys.modules.pop("npd_user_lines_target", None)


def test_the_module_is_found_by_its_file_and_through_a_symlink(module_file):
    module, link = module_file
    found = user_lines.user_module(module.__file__)
    assert found == ("npd_user_lines_target", vars(module))
    assert user_lines.user_module(link) == found
    assert user_lines.user_module("<npdynamo-graph-1>") is None


def test_a_lookup_after_a_new_import_does_not_resolve_every_module_again(tmp_path, monkeypatch):
    not_a_module = str(tmp_path / "exec_only.py")  # code compiled from a file nothing imported
    assert user_lines.user_module(not_a_module) is None
    calls = []
    real = os.path.realpath
    monkeypatch.setattr(os.path, "realpath", lambda p, *a, **k: calls.append(p) or real(p))
    for i in range(3):  # each capture sees one module more, so the miss is looked for again
        monkeypatch.setitem(sys.modules, f"npd_fake_{i}", types.ModuleType(f"npd_fake_{i}"))
        assert user_lines.user_module(not_a_module) is None
    assert len(sys.modules) > 100
    assert len(calls) <= 3, calls  # the file looked for, once per lookup
