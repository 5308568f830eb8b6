"""The profile stage: ncu command lines, child processes, run directories, shards and merges.

`run` (`ncuh profile` as a library), `plan_cache`, `ncu_command`, `section_overlay` and
`ncu_errors` build and judge ncu runs; `processes`, `schedule`, `head_start`, `gpus` and
`history` run them on one GPU or several; `phases`, `post`, `worker` and `progress` time,
post-process and report them; `slurm` and `merge` spread them over a cluster and join the
shards. Nothing is imported here: the runner under ncu imports `ncu_command` and `ncu_errors`
and must not load the rest.
"""
