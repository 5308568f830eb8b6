# ncuh's pytest fixture `ncuh_bench`: time a variant against this project's reference on a GPU
# (test_saxpy.py uses it); without a GPU its tests skip.
pytest_plugins = ["harness.api.pytest_plugin"]
