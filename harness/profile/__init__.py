"""The profile stage: ncu command lines, child processes, run directories, shards and merges.

    run.py              `ncuh profile` as a library: plan, run the targets, build the run directory
    plan_cache.py       the plans of earlier requests, so that the same request starts ncu at once
    ncu_command.py      ncu argument lists: settings, the `pages` set, filters, the runner's program
    section_overlay.py  the `pages` set's section folder (ncu's sections, thinned)
    ncu_errors.py       why an ncu run failed, and whether the machine or one entry is to blame
    processes.py        child processes in their own process groups
    schedule.py         targets handed to slots: one at a time, or one ncu per GPU from a work queue
    history.py          how long each target took in earlier runs: what `--gpus` plans its shares by
    head_start.py       the next target's ncu started while the current one is profiled
    phases.py           an entry's seconds split at ncu's own lines: start, passes, report
    gpus.py             the host's GPUs, `--gpus`, pinning and the per-GPU ncu lock directory
    post.py             post-processing beside ncu: environment probe, per-report metrics exports
    worker.py           the post-processing children themselves
    progress.py         ncu's pass progress; the live line or plain lines
    slurm.py            `--slurm`: one job array, a shard per task
    merge.py            `ncuh merge`: shards joined into one run directory

Nothing is imported here: the runner under ncu imports `ncu_command` and `ncu_errors` and must
not load the rest.
"""
