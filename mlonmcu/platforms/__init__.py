"""Platforms: mlif (CMake + templates)."""
