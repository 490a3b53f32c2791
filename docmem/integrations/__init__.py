"""Adapters for agent frameworks; each module needs its framework's extra."""
