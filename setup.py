"""Build the optional C accelerators of asyncmongo.bson (the pure-Python codec is the reference).

The extensions are ``optional``: on a machine without a C compiler the install still succeeds
and asyncmongo runs on the pure-Python codec. ``ASYNCMONGO_NO_EXTENSIONS=1`` skips building them.
Everything else about the package lives in pyproject.toml.
"""

from __future__ import annotations

import os

from setuptools import Extension, setup

_FLAGS = ["-O3", "-std=c99", "-Wall", "-Wno-unused-function"]

ext_modules = (
    []
    if os.environ.get("ASYNCMONGO_NO_EXTENSIONS")
    else [
        Extension(
            f"asyncmongo.bson.{name}",
            [f"asyncmongo/bson/{name}.c"],
            extra_compile_args=_FLAGS,
            optional=True,
        )
        for name in ("_cencode", "_cdecode")
    ]
)

setup(ext_modules=ext_modules)
