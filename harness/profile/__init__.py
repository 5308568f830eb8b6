"""The profile stage: ncu command lines, child processes, run directories, shards and merges.

    run.py          `ncuh profile` as a library: plan targets, run them, build the run directory
    ncu_command.py  ncu argument lists (settings, the `pages` set, filters, the runner's program)
    ncu_errors.py   why an ncu run failed, and whether the machine or one entry is to blame
    processes.py    child processes in their own process groups
    schedule.py     targets handed to slots: one at a time, or one ncu per GPU from a work queue
    gpus.py         the host's GPUs, `--gpus`, pinning and the per-GPU ncu lock directory
    post.py         post-processing beside ncu: environment probe, per-report metrics exports
    worker.py       the post-processing children themselves
    progress.py     ncu's pass progress; the live line or plain lines
    slurm.py        `--slurm`: one job array, a shard per task
    merge.py        `ncuh merge`: shards joined into one run directory

Nothing is imported here: the runner under ncu imports `ncu_command` and `ncu_errors` and must
not load the rest.
"""
