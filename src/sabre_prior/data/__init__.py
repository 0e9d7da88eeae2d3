"""Stage ``data``: the demo benchmark (``demo/``), fetching a split to Parquet (``fetch``),
validating its rows (``validate``) and reading them back (``parquet``); CLI in ``commands``."""
