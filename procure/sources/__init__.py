"""Layer 2: reading sources. Bounded file reads, YAML with positions, pydantic errors mapped to
``file:line:col`` diagnostics, and the one place suggestions ("did you mean") are phrased.

Imports only layer 1 (errors, money, resources) and third-party parsers.
"""
