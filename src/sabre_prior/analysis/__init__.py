"""Analysis beyond the paper's single numbers.

* :mod:`.stats` - percentile bootstrap intervals, paired bootstrap, exact
  McNemar test, Holm adjustment (pure numpy / integer arithmetic);
* :mod:`.traces` - reading per-question traces and turning them into
  unit-level outcomes (a pair for context/texture, a question otherwise);
* :mod:`.intervals` - ``results/intervals/<model>.json``;
* :mod:`.comparison` - paired comparison of every two models;
* :mod:`.diagnostics` - world-prior diagnostics and parse failures;
* :mod:`.paper` - comparison with the paper's reported table;
* :mod:`.report` - the static HTML report.
"""

from __future__ import annotations
