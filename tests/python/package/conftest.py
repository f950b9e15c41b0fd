"""Fixtures of the inferopt package's tests: the corpus models, the CLI to compare against."""

import os
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
CORPUS = ROOT / "tests" / "models" / "corpus"


def pytest_addoption(parser):
    parser.addoption("--cli", default=os.environ.get("INFEROPT_CLI", ""), help="the inferopt executable")


@pytest.fixture(scope="session")
def cli(request):
    path = request.config.getoption("--cli")
    if not path:
        pytest.skip("no --cli given")
    return path


@pytest.fixture(scope="session")
def corpus():
    return CORPUS


def random_feeds(session, seed=0, batch=1):
    """Random float feeds for every required input, symbolic dims as `batch`."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in session.inputs:
        if i["optional"]:
            continue
        shape = [d if isinstance(d, int) else batch for d in i["shape"]]
        feeds[i["name"]] = rng.standard_normal(shape).astype(i["dtype"])
    return feeds
