# scrapyd-deploy builds the project egg with `python setup.py bdist_egg`;
# everything else (name, packages, the `scrapy` settings entry point) is in
# pyproject.toml.
from setuptools import setup

setup()
