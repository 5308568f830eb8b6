"""The profile stage: ncu command lines, child processes, run directories, shards and merges.

    run.py          `ncuh profile` as a library: plan targets, run them, build the run directory
    ncu_command.py  ncu argument lists (settings, filters, the runner's program)
    ncu_errors.py   why an ncu run failed, and whether the machine or one entry is to blame
    processes.py    child processes in their own process groups
    worker.py       post-processing children (environment probe, metrics.csv export)

Nothing is imported here: the runner under ncu imports `ncu_command` and `ncu_errors` and must
not load the rest.
"""
