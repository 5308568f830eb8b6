"""ncu's rule results of one report action, as typed `RuleResult`s."""

from __future__ import annotations

from typing import Any

from harness.report.model import Number, RuleResult
from harness.report.rule_text import RULE_TYPES, SPEEDUP_TYPES, plain_text


def read_rules(action: Any) -> tuple[RuleResult, ...]:
    """ncu's rule results of one action, markup resolved; empty placeholders dropped."""
    rules = []
    for result in action.rule_results():
        if not result.has_rule_message():
            continue
        message = result.rule_message()
        text = plain_text(str(message.get("message", "")))
        rule_type = RULE_TYPES.get(int(message.get("type", 0)), "NONE")
        if not text.strip() and rule_type == "NONE":
            continue  # an empty placeholder result: ncu prints nothing for it
        speedup_pct: Number = None
        speedup_type: str | None = None
        if result.has_speedup_estimation():
            estimate = result.speedup_estimation()
            speedup_pct = float(estimate["speedup"])
            speedup_type = SPEEDUP_TYPES.get(int(estimate["type"]))
        rules.append(
            RuleResult(
                name=str(result.rule_identifier()),
                title=str(message.get("title") or result.name()),
                type=rule_type,  # type: ignore[arg-type]
                message=text,
                speedup_pct=speedup_pct,
                speedup_type=speedup_type,
                section=str(result.section_identifier()) or None,
            )
        )
    return tuple(rules)
