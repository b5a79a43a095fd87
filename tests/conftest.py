"""Every test starts with no compiled entries (caches are shared per code object).

Under CI (``CI`` set, as ``.ci/run`` runs) hypothesis is derandomized so a run is reproducible;
local runs keep exploring new examples (``NPDYNAMO_TEST_STRESS=N`` explores N times more).
"""

import os

import pytest
from hypothesis import settings

import npdynamo

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(autouse=True)
def _fresh_npdynamo():
    npdynamo.reset()
    yield
