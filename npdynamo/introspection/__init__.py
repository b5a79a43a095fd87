"""What npdynamo did with a function, for its user: ``explain`` and ``inspect``, above capture.

- ``explain``: ``npdynamo.explain(fn)(*args)`` runs the function once under a fresh capture and
  reports every graph and graph break (``ExplainOutput``).
- ``render``: the report as short text, full text, an HTML page and DOT source.
- ``inspection``: ``npdynamo.inspect(fn)`` reads what a compiled function's caches hold now.

The package is not named ``explain``: importing a package ``npdynamo.explain`` would rebind the
attribute ``npdynamo.explain``, the public function, to the package.
"""
