"""Built-in backends: ``memory://`` (in-process) and ``file://`` (local disk)."""
