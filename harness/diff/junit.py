"""The diff as JUnit XML: one testcase per kernel, one <failure> per regressed metric.

CI systems that read JUnit (GitLab, Jenkins, GitHub test reporters) then show each kernel as a
test. Kernels on one side only are testcases marked <skipped>. Built with xml.etree, so kernel
names and messages are escaped properly.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from harness.diff.compare import DiffResult, KernelDiff
from harness.diff.formatting import percent, quantity
from harness.diff.inputs import FailedEntry, KernelData
from harness.diff.markdown import status_line
from harness.errors import printable


def render_junit(result: DiffResult) -> str:
    cases = [_case(k) for k in result.kernels]
    cases += [_broken(f) for f in result.broken]
    cases += [_skipped(k, "added: present in the current side only") for k in result.added]
    cases += [_skipped(k, "removed: present in the baseline only") for k in result.removed]
    failures = sum(len(case.findall("failure")) > 0 for case in cases)
    skipped = len(result.added) + len(result.removed)
    suites = ET.Element("testsuites", name="ncuh diff", tests=str(len(cases)),
                        failures=str(failures))
    suite = ET.SubElement(suites, "testsuite", name="ncuh diff", tests=str(len(cases)),
                          failures=str(failures), errors="0", skipped=str(skipped))
    props = ET.SubElement(suite, "properties")
    for name, value in (("baseline", str(result.baseline.path)),
                        ("current", str(result.current.path)),
                        ("status", status_line(result))):
        ET.SubElement(props, "property", name=name, value=value)
    suite.extend(cases)
    _xml_safe(suites)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


# XML 1.0 allows no control characters but tab, newline and carriage return, and xml.etree
# writes them unchecked: a kernel name holding one would make the whole file unreadable. Those
# and the bidi controls are written as escapes (`\x1b`, `\u202e`), as on every page; the two
# noncharacters XML forbids as well become U+FFFD.
_NOT_XML = re.compile("[\ufffe\uffff]")


def _xml_safe(root: ET.Element) -> None:
    for element in root.iter():
        if element.text:
            element.text = _NOT_XML.sub("\ufffd", printable(element.text, keep_lines=True))
        for key, value in element.attrib.items():
            element.set(key, _NOT_XML.sub("\ufffd", printable(value, keep_lines=True)))


def _case(kernel: KernelDiff) -> ET.Element:
    case = ET.Element("testcase", classname=_classname(kernel.key.size),
                      name=kernel.key.label if not kernel.key.size
                      else kernel.key.label.split(" [")[0] + _ordinal(kernel.key.ordinal))
    summary = kernel.explanation.summary if kernel.explanation else ""
    for metric in kernel.regressions:
        message = (f"{metric.label} {percent(metric.change_pct)} "
                   f"({quantity(metric.baseline, metric.unit)} -> "
                   f"{quantity(metric.current, metric.unit)}, threshold "
                   f"{metric.threshold_pct:g}%)")
        failure = ET.SubElement(case, "failure", message=message, type="SLOWER")
        failure.text = summary
    out = ET.SubElement(case, "system-out")
    lines = kernel.explanation.lines() if kernel.explanation else []
    out.text = "\n".join([f"{kernel.verdict}: {summary}" if summary else kernel.verdict, *lines])
    return case


def _broken(entry: FailedEntry) -> ET.Element:
    case = ET.Element("testcase", classname=_classname(entry.key.size), name=entry.key.name)
    failure = ET.SubElement(case, "failure", message=f"failed in the current run: {entry.error}",
                            type="FAILED")
    failure.text = entry.error
    return case


def _skipped(kernel: KernelData, why: str) -> ET.Element:
    case = ET.Element("testcase", classname=_classname(kernel.key.size),
                      name=kernel.key.name + _ordinal(kernel.key.ordinal))
    ET.SubElement(case, "skipped", message=why)
    return case


def _classname(size: tuple[int, ...] | None) -> str:
    return "ncuh.diff." + ("x".join(str(n) for n in size) if size else "kernels")


def _ordinal(ordinal: int) -> str:
    return f" #{ordinal}" if ordinal else ""
