"""Baselines and accepted risks: which findings of ``chain check`` still fail it. The rules, once.

Pure functions on text and on the summary of ``risks.check_chain``; the CLI
reads and writes the files.

* A **baseline** (JSON, written by ``--write-baseline``) lists findings by
  fingerprint. A finding in it is ``baseline``: reported, but it does not fail.
* An **accepted-risks** file (TOML) lists findings a team accepts, each with an
  ``owner``, a ``reason`` and an ``expires`` date, and either the finding's
  ``fingerprint`` or its ``kind`` and ``dependency`` id::

      [[accepted]]
      fingerprint = "3f1c..."          # or: kind = "critical"  dependency = "dep-7"
      owner = "ada@example.com"
      reason = "Vendor confirmed delivery on 2026-04-02"
      expires = 2026-04-30

  An accepted finding is ``accepted`` and does not fail, through its expiry date;
  from the next day (by the chain's ``asOf`` date) it is ``expired`` and fails again.

Finding states: ``new``, ``baseline``, ``accepted``, ``expired``; ``inBaseline`` says whether
the baseline lists the finding, whatever its state. A finding fails the
check when its kind is named by ``--fail-on`` and its state is ``new`` or ``expired``.
"""

from __future__ import annotations

import tomllib
from datetime import date
from typing import Any

from sowctl.foundation import json_input
from sowctl.foundation.errors import InvalidInput, quoted
from sowctl.gate.risks import RISK_KINDS

BASELINE_VERSION = 1
FAILING_STATES = ("new", "expired")
_ACCEPT_KEYS = {"fingerprint", "kind", "dependency", "owner", "reason", "expires"}


def baseline_document(summary: dict[str, Any]) -> dict[str, Any]:
    """The baseline of a check: every finding of every kind, by fingerprint."""
    return {
        "version": BASELINE_VERSION,
        "tool": "sowctl chain check",
        "sowId": summary["sowId"],
        "asOf": summary["asOf"],
        "findings": [
            {
                "fingerprint": finding["fingerprint"],
                "kind": finding["kind"],
                "dependencyId": finding["dependencyId"],
                "itemIds": finding["itemIds"],
                "message": finding["message"],
            }
            for finding in summary["findings"]
        ],
    }


def parse_baseline(text: str, option: str = "--baseline") -> set[str]:
    """The fingerprints of a baseline file; InvalidInput naming the option otherwise."""
    try:
        data = json_input.loads(text)
    except json_input.JsonTooDeep as exc:
        raise InvalidInput.for_field(option, str(exc)) from None
    except ValueError as exc:
        raise InvalidInput.for_field(option, f"not a JSON baseline file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise InvalidInput.for_field(option, 'not a baseline file: expected an object with a "findings" list')
    if data.get("version") != BASELINE_VERSION:
        raise InvalidInput.for_field(option, f"unsupported baseline version {quoted(data.get('version'))}")
    prints = set()
    for index, finding in enumerate(data["findings"]):
        value = finding.get("fingerprint") if isinstance(finding, dict) else None
        if not isinstance(value, str) or not value:
            raise InvalidInput.for_field(option, f"findings[{index}].fingerprint: must be a non-empty string")
        prints.add(value)
    return prints


def parse_accepted(text: str, option: str = "--accepted-risks") -> list[dict[str, Any]]:
    """The entries of an accepted-risks file, checked; InvalidInput naming the entry and field."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput.for_field(option, f"not a TOML file ({exc})") from None
    except RecursionError:  # tomllib's parser recurses; memory stays flat until it stops
        raise InvalidInput.for_field(option, "arrays or tables nest too deep to be read") from None
    entries = data.get("accepted", [])
    unknown_top = sorted(set(data) - {"accepted"})
    if unknown_top or not isinstance(entries, list):
        raise InvalidInput.for_field(option, "expected [[accepted]] tables only")
    out = []
    for index, entry in enumerate(entries):
        where = f"{option}: accepted[{index}]"

        def bad(field: str, message: str, where: str = where) -> InvalidInput:
            return InvalidInput(f"{where}.{field}: {message}")

        unknown = sorted(set(entry) - _ACCEPT_KEYS)
        if unknown:
            raise bad(unknown[0], f"unknown key (use {', '.join(sorted(_ACCEPT_KEYS))})")
        for field in ("owner", "reason"):
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                raise bad(field, "is required (a non-empty string)")
        expires = entry.get("expires")
        if isinstance(expires, str):
            try:
                expires = date.fromisoformat(expires)
            except ValueError:
                raise bad("expires", f"{quoted(entry['expires'])} is not a date (YYYY-MM-DD)") from None
        if not isinstance(expires, date) or hasattr(expires, "hour"):
            raise bad("expires", "is required (a date, YYYY-MM-DD)")
        if "fingerprint" in entry:
            if not isinstance(entry["fingerprint"], str) or not entry["fingerprint"]:
                raise bad("fingerprint", "must be a non-empty string")
            match = ("fingerprint", entry["fingerprint"])
        else:
            kind, dependency = entry.get("kind"), entry.get("dependency")
            if kind not in RISK_KINDS or kind == "circular":
                raise bad(
                    "kind", "give a fingerprint, or a kind (a dependency's risk kind) and a dependency id"
                )
            if not isinstance(dependency, str) or not dependency:
                raise bad("dependency", "is required with kind (a dependency id)")
            match = ("dependency", f"{kind}/{dependency}")
        out.append(
            {
                "match": match,
                "owner": entry["owner"],
                "reason": entry["reason"],
                "expires": expires.isoformat(),
            }
        )
    return out


def apply_gate(
    summary: dict[str, Any], baseline: set[str] | None = None, accepted: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The summary with each finding's ``state`` (and ``acceptance``), ``fails`` and ``passed``
    recomputed. Acceptance wins over the baseline; an expired acceptance fails again."""
    by_print = {e["match"][1]: e for e in accepted or () if e["match"][0] == "fingerprint"}
    by_dep = {e["match"][1]: e for e in accepted or () if e["match"][0] == "dependency"}
    fail_on = set(summary["failOn"])
    today = summary["asOf"]
    for finding in summary["findings"]:
        acceptance = by_print.get(finding["fingerprint"]) or by_dep.get(
            f"{finding['kind']}/{finding['dependencyId']}"
        )
        finding["inBaseline"] = baseline is not None and finding["fingerprint"] in baseline
        if acceptance is not None:
            finding["state"] = "accepted" if today <= acceptance["expires"] else "expired"
            finding["acceptance"] = {key: acceptance[key] for key in ("owner", "reason", "expires")}
        elif finding["inBaseline"]:
            finding["state"] = "baseline"
        else:
            finding["state"] = "new"
        finding["fails"] = finding["kind"] in fail_on and finding["state"] in FAILING_STATES
    summary["usesBaseline"] = baseline is not None
    summary["passed"] = not any(finding["fails"] for finding in summary["findings"])
    return summary
