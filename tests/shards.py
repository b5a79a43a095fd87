"""Sharing long lists of external benchmark kernels among the Python versions of one CI run.

``.ci/run`` runs the whole suite under Python 3.11, 3.12 and 3.13; when all three are there it
sets ``NPDYNAMO_TEST_SHARD_BY_VERSION=1`` and a test over an external kernel list (read at run
time from ``../shared/external``) checks only its version's third of the list: kernel ``i`` on
3.11 when ``i % 3 == 0``, on 3.12 when ``i % 3 == 1``, on 3.13 when ``i % 3 == 2``. Together the
three versions check every kernel once per run. Without the variable (a local run, or a CI run
missing a version) every version checks the whole list.
"""

from __future__ import annotations

import os
import sys
import zlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

#: the versions ``.ci/run`` shares the lists among, in shard order
VERSIONS = ((3, 11), (3, 12), (3, 13))


def version_shard(items: Sequence[T], version: tuple[int, int] | None = None) -> list[T]:
    """This Python version's (or ``version``'s) share of ``items`` under a sharded CI run, else
    all of them."""
    if os.environ.get("NPDYNAMO_TEST_SHARD_BY_VERSION") != "1":
        return list(items)
    index = VERSIONS.index(version or sys.version_info[:2])
    return list(items[index::len(VERSIONS)])


#: the test folders whose parameter lists are shared among the versions the same way: what they
#: test (kernels, op rules, exports, graph passes, gradients) happens to a graph, after capture,
#: and is the same on every Python; capture's own tests (``tests/capture``) and the end-to-end
#: ones run whole on every version
SHARED_FOLDERS = ("autograd", "backends", "export", "fx", "ops")


def shard_parameters(items: list, version: tuple[int, int] | None = None) -> tuple[list, list]:
    """(kept, left out): under a sharded CI run, this version's third of each parametrized test
    function of ``SHARED_FOLDERS`` that has at least one parameter set per version (parameter
    set ``i`` of a function on 3.11 when ``i % 3 == 0``, ...): every function still runs on every
    version, every parameter set once per run. And capture's tests run with ``backend="numba"``
    on one version each (by a hash of the test's id; the same test with ``backend="eager"``
    runs on every version): what they add to the eager run is the numba backend on the graph
    capture made, the same on every Python, where capture itself is checked bit for bit on the
    eager backend. Else all of them."""
    if os.environ.get("NPDYNAMO_TEST_SHARD_BY_VERSION") != "1":
        return list(items), []
    index = VERSIONS.index(version or sys.version_info[:2])
    groups: dict[tuple, list] = {}
    left_out = set()
    for item in items:
        parts = item.nodeid.split("/")
        if not hasattr(item, "callspec") or len(parts) <= 2:
            continue
        if parts[1] in SHARED_FOLDERS:
            groups.setdefault((item.path, item.originalname), []).append(item)
        elif parts[1] == "capture" and getattr(item.callspec, "params", {}).get(
                "backend") == "numba" and \
                zlib.crc32(item.nodeid.encode()) % len(VERSIONS) != index:
            left_out.add(id(item))
    for group in groups.values():
        if len(group) >= len(VERSIONS):
            left_out.update(id(item) for position, item in enumerate(group)
                            if position % len(VERSIONS) != index)
    return ([item for item in items if id(item) not in left_out],
            [item for item in items if id(item) in left_out])
