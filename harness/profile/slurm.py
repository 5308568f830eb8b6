"""`ncuh profile … --slurm`: one Slurm job array, a task per variant × size, each a shard.

Writes `<out>/<run id>.slurm/` (`job.sh`, the array job running
`python -m harness.profile.slurm task <dir> $SLURM_ARRAY_TASK_ID`; `tasks.json`, schema
ncuh.slurm/1; `shards/`; `logs/`) and submits it with `sbatch`. Each task is an ordinary
`ncuh profile` of one target; `ncuh merge <dir>/shards/* --out <run>` joins the shards, at once
with `--slurm-arg=--wait`. The tasks run this Python and this ncuh checkout, so both, and
`--out`, must be on a file system the nodes share.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import NcuhError, error_line
from harness.profile.ncu_command import KernelFilter, NcuSettings
from harness.profile.processes import package_environment
from harness.project import size_text
from harness.util import atomic_write_text

if TYPE_CHECKING:
    from harness.profile.planning import Plan, ProfileRequest

SCHEMA = "ncuh.slurm/1"
TASKS = "tasks.json"
JOB = "job.sh"
SHARDS = "shards"


@dataclass(frozen=True)
class Submission:
    """A submitted job array: where it lives, its id, and the command that merges it."""

    job_dir: Path
    job_id: str
    tasks: int
    merge_out: Path
    merged: Path | None = None  # the merged run, when sbatch waited (--wait)

    @property
    def merge_command(self) -> list[str]:
        return ["ncuh", "merge", f"{self.job_dir / SHARDS}/*", "--out", str(self.merge_out)]


# ---------------------------------------------------------------- requests as JSON


def request_to_json(request: ProfileRequest) -> dict[str, Any]:
    data = dataclasses.asdict(request)
    data["out"] = str(request.out)
    data["project"] = str(request.project) if request.project is not None else None
    return data


def request_from_json(data: dict[str, Any]) -> ProfileRequest:
    from harness.profile.planning import ProfileRequest

    fields = dict(data)
    fields["settings"] = NcuSettings(**{key: tuple(value) if isinstance(value, list) else value
                                        for key, value in fields["settings"].items()})
    fields["program_filter"] = KernelFilter(**{
        key: tuple(value) if isinstance(value, list) else value
        for key, value in fields["program_filter"].items()})
    for key in ("variants", "program"):
        fields[key] = tuple(fields[key])
    for key in ("sizes", "bench_sizes"):  # size words ("4096") or values per dim
        fields[key] = tuple(tuple(size) if isinstance(size, list) else size
                            for size in fields[key])
    fields["out"] = Path(fields["out"])
    fields["project"] = Path(fields["project"]) if fields.get("project") else None
    return ProfileRequest(**fields)


def task_requests(plan_: Plan, shards: Path) -> list[ProfileRequest]:
    """One request per target of the plan: that target alone, into `shards/<label>`."""
    request = plan_.request
    tasks = []
    for target in plan_.targets:
        if target.variant is None:  # a user's program: one task, as asked
            tasks.append(replace(request, out=shards, run_id=target.label, gpus=None))
            continue
        from harness.project import open_project

        # The node finds the same project wherever the task starts: its absolute path.
        project = Path(open_project(request.project).path).resolve()
        tasks.append(replace(
            request, variants=(target.variant,), all_variants=False, project=project,
            sizes=(size_text(target.size or ()),),
            out=shards, run_id=target.label, gpus=None, bench_sizes=()))
    return tasks


# ---------------------------------------------------------------- submitting


def job_script(job_dir: Path, tasks: int, name: str, python: str | None = None) -> str:
    """The array job: every task runs its own request with this Python and this ncuh."""
    root = Path(__file__).resolve().parents[2]
    python = python or sys.executable
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={name}",
        f"#SBATCH --array=0-{tasks - 1}",
        f"#SBATCH --output={job_dir / 'logs' / 'task-%a.out'}",
        "# Written by `ncuh profile --slurm`; options given to sbatch override these lines.",
        f"export PYTHONPATH={shlex.quote(str(root))}${{PYTHONPATH:+:$PYTHONPATH}}",
        f"exec {shlex.quote(python)} -m harness.profile.slurm task {shlex.quote(str(job_dir))} "
        '"$SLURM_ARRAY_TASK_ID"',
    ]
    return "\n".join(lines) + "\n"


def prepare(plan_: Plan, job_dir: Path, run_id: str) -> int:
    """Write job.sh and tasks.json into `job_dir`; return the number of tasks."""
    if job_dir.exists():
        raise NcuhError(f"{job_dir} already exists")
    tasks = task_requests(plan_, job_dir / SHARDS)
    (job_dir / "logs").mkdir(parents=True)
    (job_dir / SHARDS).mkdir()
    atomic_write_text(job_dir / TASKS, json.dumps(
        {"schema": SCHEMA, "run_id": run_id,
         "tasks": [request_to_json(task) for task in tasks]}, indent=2) + "\n")
    script = job_dir / JOB
    atomic_write_text(script, job_script(job_dir, len(tasks), f"ncuh-{run_id}"))
    script.chmod(0o755)
    return len(tasks)


def submit(plan_: Plan, run_id: str, slurm_args: Sequence[str] = (),
           sbatch: str = "sbatch") -> Submission:
    """Write the job array under `<out>/<run id>.slurm/`, submit it, merge it if sbatch waited."""
    request = plan_.request
    if request.bench:
        raise NcuhError("--bench does not go with --slurm: run `ncuh bench` once, apart")
    if request.gpus is not None:
        raise NcuhError("--gpus does not go with --slurm: ask Slurm for GPUs (--slurm-arg)")
    out = request.out.resolve()
    job_dir = out / f"{run_id}.slurm"
    waited = "--wait" in slurm_args or "-W" in slurm_args
    made = _first_missing(job_dir)  # the folder this submission makes, --out's if it must
    try:
        count = prepare(plan_, job_dir, run_id)
        job_id = _sbatch([sbatch, "--parsable", *slurm_args, str(job_dir / JOB)], waited)
    except (NcuhError, OSError):
        if made is not None:  # no job was queued: nothing of it is left behind
            shutil.rmtree(made, ignore_errors=True)
        raise
    submission = Submission(job_dir, job_id, count, out / run_id)
    if waited:
        from harness.profile.merge import merge_runs

        written = {path.name for path in (job_dir / SHARDS).iterdir() if path.is_dir()}
        missing = [index for index, task in enumerate(tasks_of(job_dir))
                   if task.run_id not in written]
        if missing:
            raise NcuhError(f"job {job_id}: task(s) {', '.join(map(str, missing))} of {count} "
                            f"wrote no shard; see {job_dir / 'logs'}/task-<i>.out")
        shards = [job_dir / SHARDS / task.run_id for task in tasks_of(job_dir)
                  if task.run_id is not None]
        merged = merge_runs(shards, submission.merge_out)
        submission = replace(submission, merged=merged)
    return submission


def _first_missing(path: Path) -> Path | None:
    """The outermost of `path` and its parents that does not exist yet (None if it does)."""
    missing = None
    while not path.exists():
        missing, path = path, path.parent
    return missing


def _sbatch(argv: list[str], waited: bool) -> str:
    """Submit the job array; its job id."""
    try:
        completed = subprocess.run(argv, capture_output=True, text=True, check=False,
                                   env=package_environment())
    except OSError as error:
        raise NcuhError(f"cannot run sbatch ({error}): is Slurm installed here?") from None
    job_id = completed.stdout.strip().split(";")[0]
    # With --wait, sbatch exits with the worst task's status once the array is done: a task
    # with a failed entry (status 1) still wrote its shard, so the shards decide.
    if completed.returncode != 0 and not (waited and job_id.isdigit()):
        said = (completed.stderr or completed.stdout).strip().splitlines()
        raise NcuhError(f"sbatch failed (status {completed.returncode})"
                        + (f": {said[-1]}" if said else ""))
    return job_id


def tasks_of(job_dir: Path) -> list[ProfileRequest]:
    """The requests of a job array's tasks, in task order."""
    data = json.loads((job_dir / TASKS).read_text(encoding="utf-8"))
    if data.get("schema") != SCHEMA:
        raise NcuhError(f"{job_dir / TASKS}: not an ncuh job array ({SCHEMA})")
    return [request_from_json(task) for task in data["tasks"]]


# ---------------------------------------------------------------- one task, on the node


def run_task(job_dir: Path, index: int) -> int:
    """Profile task `index` of the array into its shard; the exit status of `ncuh profile`."""
    from harness.profile.progress import ProgressDisplay
    from harness.profile.run import run_profile

    tasks = tasks_of(job_dir)
    if not 0 <= index < len(tasks):
        raise NcuhError(f"task {index}: the array has tasks 0-{len(tasks) - 1}")
    progress = ProgressDisplay(live=False)
    outcome = run_profile(tasks[index], progress=progress)
    for entry in outcome.failures:
        print(f"ncuh: failed: {entry.target.label}: {entry.error}", file=sys.stderr)
    print(outcome.run_dir)
    return outcome.exit_code


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.profile.slurm")
    commands = parser.add_subparsers(dest="command", required=True)
    task = commands.add_parser("task", help="run one task of a job array (Slurm calls this)")
    task.add_argument("job_dir", type=Path)
    task.add_argument("index", type=int)
    args = parser.parse_args(argv)
    try:
        return run_task(args.job_dir, args.index)
    except NcuhError as error:
        print(error_line(error), file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
