# sbx ecosystem fixture: a package with a C extension, installed from its sdist.
from setuptools import Extension, setup

setup(
    name="ecopkg",
    version="1.0",
    packages=["ecopkg"],
    ext_modules=[Extension("ecopkg._speedups", ["src/speedups.c"])],
)
