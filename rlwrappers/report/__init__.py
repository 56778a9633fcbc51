"""Reports: tables, figures and self-contained HTML pages of what the studies measured.

- :mod:`~rlwrappers.report.tables`: a summary as fixed-width text for terminals, or as HTML.
- :mod:`~rlwrappers.report.plots`: the figures of an evaluation (LCB curves, Pareto fronts, returns, paired
  changes, spectra, sweeps, impact panels, forecasts), each plain data in and a new figure out.
- :mod:`~rlwrappers.report.evaluation`: :func:`~rlwrappers.report.evaluation.write_report`, the report of an
  evaluation's run folder.
- :mod:`~rlwrappers.report.robustness`: the report of an offline-robustness measurement.
- :mod:`~rlwrappers.report.saliency`: the report of a saliency study.
- :mod:`~rlwrappers.report.html`: the page and figure helpers they share.

Nothing here computes a measure: the numbers come from :mod:`rlwrappers.metrics` and the studies.
"""
