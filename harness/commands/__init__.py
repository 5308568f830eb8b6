"""One module per `ncuh` subcommand; each parses options, calls the library, prints.
"""

from harness.commands.options import PROJECT_HELP
