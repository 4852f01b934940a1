"""The plugin's version, written into history files, recordings and caches."""

__version__ = "0.1.0"
