"""Every test starts with no compiled entries (caches are shared per code object).

The numba kernel cache of a test run is a temporary directory (made before npdynamo is imported,
shared by the pytest-xdist workers, removed at the end), never the user's
``~/.cache/npdynamo``; a run given ``NPDYNAMO_CACHE_DIR`` uses that directory and keeps it.

The numba backend compiles blocking here (``config.tiered`` off, and ``NPDYNAMO_TIERED=0`` for
the subprocesses tests start), so that every test asserting kernels, tuning or reports sees the
compiled tier from the first call; the tier tests (``tests/backends/test_tiers.py``) turn tiers
on themselves.

Under ``.ci/run`` with all three Pythons, the parameter sets of the tests of the stages after
capture are shared among the versions (``tests/shards.py``), as the external kernel lists are,
and capture's tests on the numba backend run on one version each.

Under CI (``CI`` set, as ``.ci/run`` runs) hypothesis is derandomized so a run is reproducible;
local runs keep exploring new examples (``NPDYNAMO_TEST_STRESS=N`` explores N times more).
"""

import os
import shutil
import tempfile

if "NPDYNAMO_CACHE_DIR" not in os.environ:  # the xdist workers inherit it from the controller
    os.environ["NPDYNAMO_CACHE_DIR"] = tempfile.mkdtemp(prefix="npdynamo-tests-")
    _MADE_CACHE_DIR = os.environ["NPDYNAMO_CACHE_DIR"]
else:
    _MADE_CACHE_DIR = None

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

import npdynamo  # noqa: E402
from tests.shards import shard_parameters  # noqa: E402

os.environ["NPDYNAMO_TIERED"] = "0"
npdynamo.config.tiered = False
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _fresh_npdynamo():
    npdynamo.reset()
    yield


def pytest_collection_modifyitems(config, items):
    kept, left_out = shard_parameters(items)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


def pytest_sessionfinish(session):
    if _MADE_CACHE_DIR is not None and not hasattr(session.config, "workerinput"):
        shutil.rmtree(_MADE_CACHE_DIR, ignore_errors=True)
