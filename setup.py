"""Everything is in pyproject.toml except package discovery, which also ships hotfixes/.

The hotfix catalog lives at the repository's top level (one file per hotfix) but must travel with
the package: a built wheel carries it as ``specdraft/hotfixes/`` (see specdraft/patching/catalog.py).
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["specdraft", "specdraft.*"]) + ["specdraft.hotfixes"],
    package_dir={"specdraft.hotfixes": "hotfixes"},
)
