"""The numba-examples runner (``benchmarks/numba_examples.py``): a kernel's row says whether each
variant matched NumPy, its graphs, breaks and numba fallbacks; the table's ratios are the right
way round. The suite sits next to the project's checkout (``../shared/external``) and is read
at run time: without it the run test is skipped (a user's clone has no such folder)."""

from __future__ import annotations

import json

import pytest

from benchmarks import numba_examples

FOLDER = numba_examples.DEFAULT_FOLDER


@pytest.mark.skipif(not (FOLDER / "manifest.json").is_file(),
                    reason="../shared/external/numba-examples is not next to this checkout")
@pytest.mark.parametrize("name", ["exp_fused", "blackscholes_outparam"])
def test_a_kernel_runs_as_one_graph_on_every_variant(name):
    specs = json.loads((FOLDER / "manifest.json").read_text())["kernels"]
    (spec,) = [s for s in specs if s["name"] == name]
    row = numba_examples.run_kernel(FOLDER, spec, "S", timing=False, timeout=300,
                                    one_thread=True)
    assert "error" not in row, row
    assert row["eager"] and row["numba"] and row["hand"], row
    assert (row["graphs"], row["breaks"], row["fallbacks"]) == (1, 0, 0), row
    assert row["numba_first_s"] > 0 and row["hand_first_s"] > 0


def test_table_ratios_and_totals():
    rows = [
        {"kernel": "a", "eager": True, "numba": True, "hand": True, "graphs": 1, "breaks": 0,
         "fallbacks": 0, "numpy_s": 4e-3, "eager_s": 2e-3, "numba_s": 1e-3, "hand_s": 2e-3,
         "numba_first_s": 1.0, "hand_first_s": 0.5},
        {"kernel": "b", "eager": True, "numba": False, "hand": True, "graphs": 2, "breaks": 1,
         "fallbacks": 1, "numpy_s": 4e-3, "eager_s": 4e-3, "numba_s": 1e-3, "hand_s": 1e-3,
         "numba_first_s": 1.0, "hand_first_s": 0.5, "reasons": ["line 3: print"]},
        {"kernel": "c", "error": "timeout after 5 s"},
    ]
    text = numba_examples.table(rows)
    assert "numba: 1/3 correct; geometric-mean speed-up over NumPy x4.00 (1 timed)" in text
    assert "hand: 2/3 correct; geometric-mean speed-up over NumPy x2.83 (2 timed)" in text
    # a wrong numba result is not timed against the hand-written version
    assert "against hand-written numba: geometric mean x2.00, lowest x2.00 (1 kernels" in text
    assert "numba fallback warnings: 1" in text and "break in b: line 3: print" in text
    assert "c                           ERROR timeout" in text
