"""The starter project's test set-up: ncuh's `ncuh_bench` fixture (see test_saxpy.py)."""

# ncuh's pytest fixture `ncuh_bench`: time a variant against this project's reference on a GPU
# (test_saxpy.py uses it); without a GPU its tests skip.
pytest_plugins = ["harness.api.pytest_plugin"]
