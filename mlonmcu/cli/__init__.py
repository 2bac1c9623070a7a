"""Command line interface (thin)."""
