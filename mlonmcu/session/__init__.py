"""Session, runs, stages, executors, cache and manifest."""
