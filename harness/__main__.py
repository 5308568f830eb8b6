"""`python -m harness` runs the ncuh command line."""

from harness.entry import main

main()
