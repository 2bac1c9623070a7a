"""Backends: tvmaot (TVM Relax → plain C)."""
