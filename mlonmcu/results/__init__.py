"""The results store: every finished run of every session, across time and machines."""
