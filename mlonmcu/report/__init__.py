"""Report: columns, export and comparison."""
