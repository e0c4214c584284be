"""Everything is in pyproject.toml except package discovery, which also ships hotfixes/.

The hotfix catalog lives at the repository's top level (one file per hotfix) but must travel with
the package: a built wheel carries it as ``specdraft/hotfixes/`` (see specdraft/patching/catalog.py).
The other top-level packages, ``tools/`` (release trees, table readers, test-bench parts) and ``tests/``,
never ship (tests/test_wheel.py checks what the wheel holds).
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["specdraft", "specdraft.*"]) + ["specdraft.hotfixes"],
    package_dir={"specdraft.hotfixes": "hotfixes"},
)
