"""A thin shim: the package metadata lives in pyproject.toml's [project] table.

Kept so that ``python setup.py ...`` and tools that look for setup.py still work.
"""

from setuptools import setup

setup()
