"""Features: validate, ..."""
