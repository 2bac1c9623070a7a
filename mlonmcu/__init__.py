"""mlonmcu: benchmark machine-learning models on microcontrollers.

The CLI is a thin layer over this package; :mod:`mlonmcu.api` is the entry point for scripts.
"""

__version__ = "0.1.0"
