"""sbx ecosystem fixture: a pure-Python front of a C extension."""
from ecopkg._speedups import add

__all__ = ["add"]
