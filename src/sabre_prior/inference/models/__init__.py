"""Model backends (see base.py for the interface and the registry)."""
