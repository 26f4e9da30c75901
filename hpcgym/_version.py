"""The package version (a leaf module: any layer may import it)."""

__version__ = "1.0.0"
