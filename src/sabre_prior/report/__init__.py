"""Stage ``report``: the paper's tables (``tables``), figures (``figures``, ``plotting``) and
the plot data for ``dvc plots`` (``plotdata``)."""
