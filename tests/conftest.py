"""Every test starts with no compiled entries (caches are shared per code object)."""

import pytest

import npdynamo


@pytest.fixture(autouse=True)
def _fresh_npdynamo():
    npdynamo.reset()
    yield
