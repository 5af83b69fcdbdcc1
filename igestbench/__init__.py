"""igestbench: service verification and ingestion benchmarks for ICAT catalogues (``sv7``)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
