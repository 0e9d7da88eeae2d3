"""Stage ``repro``: the pipeline's one declaration (``pipeline``), the run manifest
(``manifest``) and the Snakemake/DVC bridge (``dagsync``, ``sabre generate``/``dvc-sync``)."""
