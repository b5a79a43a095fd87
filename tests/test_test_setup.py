"""The test run's own setup: kernels go to a temporary cache directory, not the user's."""

import os

from npdynamo.backends.numba import diskcache


def test_the_kernel_cache_of_a_test_run_is_not_the_users():
    directory = str(diskcache.cache_dir())
    home_cache = os.path.join(os.path.expanduser("~"), ".cache", "npdynamo")
    assert not os.path.realpath(directory).startswith(os.path.realpath(home_cache))
    assert directory.startswith(os.environ["NPDYNAMO_CACHE_DIR"])
