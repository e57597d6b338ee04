"""vlpc's version (``vlpc.__version__``), a bottom-layer module: the compile cache and the tuning
database key their entries by it without importing the ``vlpc`` package's public API."""

__version__ = "0.1.0"
