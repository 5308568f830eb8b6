"""The registry of rules: which rules exist, in which order they run, and `run_rules`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import ModuleType

from harness.findings import (
    atomics,
    bank_conflicts,
    bound,
    clusters,
    coalescing,
    divergence,
    explains,
    imbalance,
    instruction_mix,
    local_arrays,
    memory_level,
    ncu_rules,
    occupancy,
    odd_figures,
    pipes,
    progress,
    spills,
    stalls,
    synchronization,
    tensor_core,
    vectorization,
    warp_primitives,
    waves,
)
from harness.findings.evidence import OP_WORDS, failing, words
from harness.findings.fixes import fixes_for
from harness.findings.model import Finding, RuleCheck
from harness.report import KernelReport, RuleResult


@dataclass(frozen=True)
class Rule:
    name: str
    check: RuleCheck
    doc: str


def _rule(module: ModuleType) -> Rule:
    return Rule(name=module.NAME, check=module.check, doc=(module.__doc__ or "").strip())


# Our own rules first; ncu's rules last, so that ours win when both say the same thing.
RULES: tuple[Rule, ...] = tuple(
    _rule(m)
    for m in (
        bound,
        tensor_core,
        pipes,
        divergence,
        atomics,
        warp_primitives,
        synchronization,
        clusters,
        memory_level,
        stalls,
        bank_conflicts,
        occupancy,
        imbalance,
        coalescing,
        vectorization,
        spills,
        local_arrays,
        waves,
        instruction_mix,
        odd_figures,
        progress,
        ncu_rules,
    )
)

_KIND_ORDER = {"bad": 0, "info": 1, "good": 2}

# ncu rule identifier -> our rule that explains the same thing; when ours fired, ncu's
# message would only repeat it.
COVERED_BY = {
    "SOLBottleneck": "bound",
    "CPIStall": "stalls",
    "SharedMemoryConflicts": "bank_conflicts",
    "AchievedOccupancy": "occupancy",
    "TheoreticalOccupancy": "occupancy",
    "LaunchConfiguration": "waves",
    "MemoryCacheAccessPattern": "coalescing",
    "HighPipeUtilization": "pipes",
    "ThreadDivergence": "divergence",
}
# ncu rules that speak of local memory under a global-memory identifier
_LOCAL_RULES = ("local_arrays", "spills")

# A stall is a symptom; these findings name causes of it. When both fire, the cause carries
# the stall's estimated gain (ncu estimates gains for stalls, not for their causes), so the
# TLDR names what to fix rather than what the warps wait for.
CAUSES: dict[str, tuple[str, ...]] = {  # reason -> rules that name a cause of it
    "long_scoreboard": ("local_arrays", "spills", "atomics", "vectorization", "clusters",
                        "synchronization"),
    "lg_throttle": ("spills", "local_arrays", "atomics", "coalescing"),
    "short_scoreboard": ("atomics", "bank_conflicts", "warp_primitives"),
    "drain": ("atomics",),
    "mio_throttle": ("bank_conflicts", "warp_primitives"),
    "barrier": ("synchronization",),
    "membar": ("synchronization",),
}
# A cause explains a stall only where its instructions carry the stall's samples: the classes
# of instructions (`report.stall_sites`) each cause is about.
CAUSE_CLASSES: dict[str, tuple[str, ...]] = {
    "local_arrays": ("local",), "spills": ("local",),
    "atomics": ("global_atomic", "shared"), "vectorization": ("global",),
    "coalescing": ("global",), "clusters": ("generic", "cluster_barrier"),
    "synchronization": ("block_barrier", "cluster_barrier", "memory_barrier", "error_barrier",
                        "global"),
    "bank_conflicts": ("shared",), "warp_primitives": ("shuffle",),
}
# Our "good" statements that say the same thing for all lanes of a warp: qualified when most
# lanes idle, since the throughput they praise is mostly wasted issue slots.
LANE_QUALIFIED = ("bound", "occupancy", "pipes")


def rule_names() -> tuple[str, ...]:
    return tuple(rule.name for rule in RULES)


def get_rule(name: str) -> Rule:
    for rule in RULES:
        if rule.name == name:
            return rule
    raise KeyError(name)


def run_rules(
    profile: KernelReport,
    previous: KernelReport | None = None,
    names: tuple[str, ...] | None = None,
) -> list[Finding]:
    """Every finding of the selected rules (all by default), most important first."""
    findings: list[Finding] = []
    for rule in RULES:
        if names is not None and rule.name not in names:
            continue
        findings.extend(rule.check(profile, previous))
    findings = [_judged(f, profile) for f in findings]
    findings = _with_causes([_with_speedup(f, profile) for f in findings])
    findings = _idle_lanes_explain_pipe(findings, profile)
    findings = explains.dominance_explains_pipe(findings)
    findings = explains.imbalance_explains_occupancy(findings)
    findings = explains.tensor_peak_outweighs(findings, profile)
    findings = explains.small_grid_explains_occupancy(findings)
    findings = explains.tail_explains_occupancy(findings)
    findings = [_consistent(f, profile) for f in findings]
    findings = [_qualified(f, profile) for f in findings]
    # only a verdict (good/bad) of ours replaces ncu's message; an aside (info) does not
    fired = {f.rule for f in findings if f.kind != "info"}
    findings = [f for f in findings if f.rule != ncu_rules.NAME or not _explained(f, fired)]
    # stable sort: within one kind, heavier findings first, rule order breaks ties
    findings = sorted(findings, key=lambda f: (_KIND_ORDER[f.kind], -f.weight))
    # the problem the TLDR names leads the list, so the page says one thing first
    top = tldr_finding(findings)
    findings = [top, *(f for f in findings if f is not top)] if top is not None else findings
    return _with_fixes(findings, profile)


def _with_fixes(findings: list[Finding], profile: KernelReport) -> list[Finding]:
    """Each problem with the fix ideas that fit it (`fixes.fixes_for`), an idea given once: to
    the first problem it answers. (A kernel at the practical limit its run benched gets none:
    the pages drop them, knowing the bench results.)"""
    given: set[tuple[str, str]] = set()
    out = []
    for f in findings:
        ideas = tuple(i for i in fixes_for(profile, f) if (i.rule, i.title) not in given)
        given.update((i.rule, i.title) for i in ideas)
        out.append(dataclasses.replace(f, fixes=ideas) if ideas else f)
    return out


def _judged(finding: Finding, profile: KernelReport) -> Finding:
    """A finding whose declared evidence the profile does not bear out (a measure missing, or
    on the wrong side of its threshold) is no verdict: it becomes an aside that says what was
    not judged and why, without a fix idea."""
    missed = failing(profile, finding.evidence)
    if not missed:
        return finding
    why = "; ".join(f"{e.text()} does not hold" if e.value is not None else e.text()
                    for e in missed)
    return dataclasses.replace(
        finding, kind="info", weight=0.0, fixes=(),
        title=f"Not judged ({finding.section}): {why}.",
        text=f"The {finding.rule} rule needs: "
        + "; ".join(f"{words(e.measure)} {OP_WORDS[e.op]} {e.threshold:g}"
                    for e in finding.evidence)
        + f" ({finding.section}).")


def covering_rules(result: RuleResult) -> tuple[str, ...]:
    """Our rules that explain the same thing as one of ncu's results."""
    if result.name == "MemoryCacheAccessPattern" and "local" in result.title.lower():
        return _LOCAL_RULES
    covered = COVERED_BY.get(result.name)
    return (covered,) if covered else ()


def _problems_for(rule: str, profile: KernelReport) -> list[RuleResult]:
    """ncu's OPT/WARN results on the topic our rule `rule` covers, where they bear on this
    kernel (a result set aside neither lends its estimate nor contradicts our praise)."""
    return [r for r in profile.rules_for_pages
            if r.is_problem and rule in covering_rules(r) and ncu_rules.why_not(r, profile) is None]


def _idle_lanes_explain_pipe(findings: list[Finding], profile: KernelReport) -> list[Finding]:
    """A pipe that binds only because idle lanes ride along is a symptom: were the working
    lanes packed into full warps, the same work would keep the pipe below `pipes.BUSY`. The
    idle lanes (the divergence finding) are then the problem to name; the pipe becomes an
    aside that says so."""
    lanes = profile.divergence.working_lanes
    if lanes is None or not any(f.rule == divergence.NAME and f.kind == "bad"
                                for f in findings):
        return findings
    out = []
    for f in findings:
        pct = f.metrics.get("pipe_pct")
        if f.rule == pipes.NAME and f.kind == "bad" and isinstance(pct, float):
            packed = pct * lanes / divergence.WARP
            if packed < pipes.BUSY:
                f = dataclasses.replace(
                    f, kind="info",
                    title=f"{f.title.rstrip('.')} — but only {lanes:.1f} of 32 lanes do work: "
                    f"packed into full warps, the same work would keep it at {packed:.1f}%.")
        out.append(f)
    return out


def _can_cause(finding: Finding) -> bool:
    """Vectorization explains long-scoreboard waits only through scalar global loads."""
    return finding.rule != vectorization.NAME or vectorization.scalar_global_loads(finding)


def _explains(cause: str, stall: Finding) -> bool:
    """Whether a cause's instructions carry the stall's samples (a stall told without a
    carrier, for want of PC samples, keeps ncu's pairing of reasons and causes)."""
    carrier = stall.metrics.get("carrier")
    return carrier is None or carrier in CAUSE_CLASSES.get(cause, ())


def _with_causes(findings: list[Finding]) -> list[Finding]:
    """Causes inherit the estimated gain of the stalls they explain (see CAUSES)."""
    fired = {f.rule for f in findings if f.kind == "bad" and _can_cause(f)}
    inherited: dict[str, float] = {}
    for f in findings:
        if f.rule != "stalls" or f.kind != "bad" or f.speedup_pct is None:
            continue
        for cause in CAUSES.get(str(f.metrics.get("reason")), ()):
            if cause in fired and _explains(cause, f):
                inherited[cause] = max(inherited.get(cause, 0.0), f.speedup_pct)
    return [dataclasses.replace(f, speedup_pct=max(f.speedup_pct or 0.0, inherited[f.rule]))
            if f.kind == "bad" and f.rule in inherited else f for f in findings]


def _with_speedup(finding: Finding, profile: KernelReport) -> Finding:
    """ncu's estimated speedup for the problem a finding names, where ncu has one."""
    if finding.kind != "bad":
        if finding.rule == ncu_rules.NAME:
            speedup = float(finding.metrics.get("speedup_pct", -1.0))
            return dataclasses.replace(finding, speedup_pct=speedup if speedup >= 0 else None)
        return finding
    estimates = [r.speedup_pct for r in _problems_for(finding.rule, profile)
                 if r.speedup_pct is not None]
    return dataclasses.replace(finding, speedup_pct=max(estimates)) if estimates else finding


def _consistent(finding: Finding, profile: KernelReport) -> Finding:
    """A page never praises what ncu flags: a "good" statement on a topic one of ncu's rules
    flags as a problem becomes an aside that names ncu's rule."""
    if finding.kind != "good":
        return finding
    flagged = [r for r in _problems_for(finding.rule, profile) if _same_unit(finding, r)]
    if not flagged:
        return finding
    titles = ", ".join(sorted({r.title or r.name for r in flagged}))
    return dataclasses.replace(
        finding, kind="info",
        title=f"{finding.title.rstrip('.')} — but ncu flags: {titles}.",
    )


def _directions(text: str) -> set[str]:
    lowered = text.lower()
    return {word for word in ("load", "store") if word in lowered}


def _same_unit(finding: Finding, rule: RuleResult) -> bool:
    """Whether ncu's rule speaks of what the finding praises: shared loads free of conflicts
    do not contradict "Shared Store Bank Conflicts"."""
    ours, theirs = _directions(finding.title), _directions(rule.title)
    return not ours or not theirs or bool(ours & theirs)


def _qualified(finding: Finding, profile: KernelReport) -> Finding:
    """High throughput or occupancy is no praise when most lanes of each warp idle."""
    if finding.kind != "good" or finding.rule not in LANE_QUALIFIED:
        return finding
    if not divergence.most_lanes_idle(profile):
        return finding
    lanes = profile.divergence.working_lanes or 0.0
    return dataclasses.replace(
        finding, kind="info",
        title=f"{finding.title.rstrip('.')} — but only {lanes:.1f} of 32 lanes per warp "
        "instruction do work, so most of it is wasted.",
    )


def _explained(finding: Finding, fired: set[str]) -> bool:
    """Whether one of our verdicts already says what ncu's message (an ncu_rules finding)
    says."""
    name, title = str(finding.metrics.get("ncu_rule")), str(finding.metrics.get("ncu_title", ""))
    probe = RuleResult(name=name, title=title, type="OPT", message="")
    return any(rule in fired for rule in covering_rules(probe))


def tldr_finding(findings: list[Finding]) -> Finding | None:
    """The problem with the largest estimated gain: ncu's speedup estimate where it has one,
    else the finding's own weight (both roughly the share of time at stake, in percent)."""
    # the binding unit opens the TLDR anyway; progress compares with the previous iteration
    problems = [f for f in findings if f.kind == "bad" and f.rule not in ("bound", "progress")]
    if not problems:
        return None
    # on a tie a cause beats the stall it explains (stalls are symptoms)
    return max(problems, key=lambda f: (f.speedup_pct if f.speedup_pct is not None
                                        else f.weight, f.rule != "stalls"))
