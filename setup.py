"""The one thing pyproject.toml cannot say: mapc's optional C extension (engine/_dupscan.c).

It finds repeated JSON object keys in one scan of the bytes, so the default duplicate-key check
costs a fraction of the parse (issue 14 §7; bench/rows_duplicates.py).  It is `optional`: where no
compiler or Python headers exist the build warns and goes on, and engine/duplicates.py uses its
pure-Python check, which gives the same verdicts and pointers (tests/hardening/test_duplicate_keys.py).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("mapc.engine._dupscan", ["engine/_dupscan.c"], optional=True)])
