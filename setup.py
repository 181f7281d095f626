"""Build hook for the one compiled module, the odds engine's optional kernel (everything else is pyproject.toml).

``baccarat/_odds_native.c`` is declared ``optional=True``: where no C compiler is available (``python:slim``
images, Windows without build tools) the build skips it with a warning and :mod:`baccarat.odds` uses its numpy
path, which gives the same counts. It needs only the C compiler and Python headers that building any sdist
needs: no extra dependency. See docs/odds-engine.md.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension("baccarat._odds_native", sources=["baccarat/_odds_native.c"], optional=True),
    ],
)
