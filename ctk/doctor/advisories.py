"""Security advisories for the NVIDIA Container Toolkit (`ctk/data/toolkit-cves.csv`)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Advisory:
    """A published CVE and the first toolkit version that fixes it."""

    cve: str
    fixed: tuple[int, ...]
    verified: bool
    summary: str
    source: str


def parse_advisories(text: str) -> tuple[Advisory, ...]:
    """Rows of the CVE table; rows with an unreadable version are left out."""
    rows = []
    for record in csv.DictReader(io.StringIO(text)):
        parts = record["fixed_version"].strip().split(".")
        if not all(p.isdigit() for p in parts):
            continue
        rows.append(
            Advisory(
                cve=record["cve"].strip(),
                fixed=tuple(int(p) for p in parts),
                verified=record["verified"].strip() == "yes",
                summary=record["summary"].strip(),
                source=record["source_url"].strip(),
            )
        )
    return tuple(rows)
