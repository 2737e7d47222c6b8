"""The benchmarks: each prints its figures (``docs/benchmarks.md`` keeps them with their
targets). Run from the repository root as modules, e.g. ``python -m bench.rules_bench --help``;
the peers they compare against come from the ``bench`` extra. Not part of the installed
package (``pyproject.toml`` ships only the product's packages)."""
