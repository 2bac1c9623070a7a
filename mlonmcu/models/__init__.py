"""Model discovery, description (frontends), samples and reference outputs."""
