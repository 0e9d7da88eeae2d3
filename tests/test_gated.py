"""Opt-in: the real gated dataset from the hub (needs network, HF_TOKEN and granted access).

Run with ``SABRE_TEST_GATED=1 HF_TOKEN=hf_... python -m pytest tests/test_gated.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sabre_prior import contracts as C
from sabre_prior.data.fetch import fetch_split

pytestmark = pytest.mark.gated

if os.environ.get("SABRE_TEST_GATED") != "1":
    pytest.skip(
        "needs the real gated dataset: set SABRE_TEST_GATED=1 and HF_TOKEN (access granted on the hub)",
        allow_module_level=True,
    )


@pytest.mark.parametrize("split", C.SPLITS)
def test_real_split_fetches_with_official_counts(split: str, tmp_path: Path) -> None:
    out = tmp_path / f"{split}.parquet"
    fetch_split(C.HUB_REPO_ID, split, out)  # validates columns, probes and the official counts
    table = pq.read_table(out)
    images, questions = C.OFFICIAL_COUNTS[split]
    assert table.num_rows == questions
    assert set(C.SPLIT_COLUMNS[split]) <= set(table.column_names)
    assert len(set(table.column(C.COL_ID).to_pylist())) == questions
