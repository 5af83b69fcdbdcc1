"""igestbench: service verification and ingestion benchmarks for ICAT catalogues (``sv7``).

PYTEST_DONT_REWRITE: the package has a pytest entry point, so every pytest session marks it
for assertion rewriting; ``sv7 run`` and ``sv7 check`` start pytest with the package imported
already, which pytest would warn about (an error under ``filterwarnings = error``).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
