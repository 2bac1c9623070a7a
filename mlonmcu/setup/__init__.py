"""Components: install, locate, verify, record versions."""
