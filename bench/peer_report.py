"""Summarise a run of PyTorch's legacy-exporter test suite (``../shared/peer/run_peer.py --json``)
against the legacy exporter's own outcomes, as the Markdown tables of docs/legacy_suite.md.

    python -m bench.peer_report /tmp/ours.json ../shared/peer/baseline_legacy.json

Prints passes per (opset, mode) for both exporters, then every test legacy passes and ours does
not, grouped by test name with the opsets/modes it fails in and its first error line.
"""

from __future__ import annotations

import argparse
import collections
import json
import re


def _load(path: str) -> dict:
    with open(path) as file:
        return {r["id"]: r for r in json.load(file)["results"]}


def _test_name(test_id: str) -> str:
    return test_id.rsplit(".", 1)[-1]


def _error(result: dict) -> str:
    message = result.get("message") or ""
    if result.get("exc_type") == "UnsupportedOperatorError":
        ops = sorted(set(re.findall(r"^\s+(\S+::\S+) x\d", result.get("traceback") or "", re.M)))
        return "unsupported " + ", ".join(ops)
    message = re.sub(r" in \S+ at \S+:", ":", message.splitlines()[0] if message else "")
    return message[:140].replace("|", "\\|")


def report(ours: dict, legacy: dict) -> str:
    rows = sorted({(r["opset"], r["mode"]) for r in legacy.values()})
    lines = ["| opset | mode | legacy passes | ours passes | ours - legacy |", "|---|---|---|---|---|"]
    for opset, mode in rows:
        ids = [i for i, r in legacy.items() if (r["opset"], r["mode"]) == (opset, mode) and i in ours]
        theirs = sum(legacy[i]["category"] == "passed" for i in ids)
        mine = sum(ours[i]["category"] == "passed" for i in ids)
        lines.append(f"| {opset} | {mode} | {theirs} | {mine} | {mine - theirs:+d} |")
    regressions = collections.defaultdict(list)
    for test_id, result in ours.items():
        if test_id in legacy and legacy[test_id]["category"] == "passed" and result["category"] != "passed":
            regressions[_test_name(test_id)].append(result)
    lines += ["", f"{sum(map(len, regressions.values()))} runs legacy passes and ours does not, "
              f"in {len(regressions)} tests:", "", "| test | where | outcome | first error line |", "|---|---|---|---|"]
    for name, results in sorted(regressions.items()):
        where = ", ".join(sorted({f"{r['mode']} {r['opset']}" for r in results}))
        lines.append(f"| {name} | {where} | {results[0]['category']} | {_error(results[0])} |")
    gains = [i for i, r in ours.items() if i in legacy and r["category"] == "passed" and legacy[i]["category"] != "passed"]
    lines += ["", f"{len(gains)} runs ours passes and legacy does not: "
              + ", ".join(sorted({_test_name(i) for i in gains}))]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ours")
    parser.add_argument("legacy")
    options = parser.parse_args()
    print(report(_load(options.ours), _load(options.legacy)))


if __name__ == "__main__":
    main()
