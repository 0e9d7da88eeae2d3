"""Stage ``scoring``: the official answer contract (``contract``) and scoring prediction files
(``evaluate``) into metrics and per-question traces."""
