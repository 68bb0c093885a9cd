"""Helpers shared by the tests and the benchmarks (not shipped in the wheel).

`bench/` imports from here, never from `tests/`; the tests import from here too, so a
helper exists once.
"""
