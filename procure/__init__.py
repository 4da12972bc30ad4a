"""procure: cost and procurement reports for GPU training clusters."""

__version__ = "0.1.0"
