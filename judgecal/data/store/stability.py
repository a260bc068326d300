"""Stability runs of one judge over variants (tables ``stability_*``; see _schema._STABILITY_SCHEMA)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from judgecal.data.store._db import Repository


class StabilityRepository(Repository):
    """The only reader and writer of the stability_* tables."""

    _STAB_VARIANT_COLS = ("variant", "name", "axis", "level", "spec_hash", "reused_from", "calls", "paid", "env",
                          "prompt", "figures")

    def add_stability_run(self, run: Mapping[str, Any], variants: Iterable[Mapping[str, Any]],
                          verdicts: Iterable[tuple[int, str, str | None, str | None]]) -> None:
        """Store (or replace) one stability run: its row, its variants and per-item ``(variant, item_id,
        verdict, raw)`` rows, all or nothing. ``figures`` and ``config`` are JSON-encoded here."""
        rid = str(run["run_id"])
        rows = [tuple(json.dumps(v[c], sort_keys=True) if c == "figures" else v.get(c)
                      for c in self._STAB_VARIANT_COLS) for v in variants]
        with self._db.transaction() as tx:
            for table in ("stability_verdicts", "stability_variants", "stability_runs"):
                tx.execute(f"DELETE FROM {table} WHERE run_id = ?", (rid,))
            tx.execute("INSERT INTO stability_runs VALUES (?, ?, ?, ?, ?, ?)",
                       (rid, run["judge"], run.get("spec_hash"), run.get("origin", "cpu"),
                        float(run.get("created_at") or time.time()), json.dumps(run.get("config") or {}, sort_keys=True)))
            tx.executemany(f"INSERT INTO stability_variants (run_id, {', '.join(self._STAB_VARIANT_COLS)}) "
                           f"VALUES (?, {', '.join('?' for _ in self._STAB_VARIANT_COLS)})", [(rid, *r) for r in rows])
            tx.executemany("INSERT INTO stability_verdicts VALUES (?, ?, ?, ?, ?)", [(rid, *v) for v in verdicts])

    def stability_runs(self) -> list[dict[str, Any]]:
        """Every stored stability run, oldest first, ``config`` decoded."""
        cur = self._conn.execute("SELECT run_id, judge, spec_hash, origin, created_at, config FROM stability_runs "
                                 "ORDER BY created_at, run_id")
        return [{"run_id": r[0], "judge": r[1], "spec_hash": r[2], "origin": r[3], "created_at": r[4],
                 "config": json.loads(r[5])} for r in cur]

    def stability_variants(self, run_id: str) -> list[dict[str, Any]]:
        """The variants of one run in order, ``figures`` decoded."""
        cols = ", ".join(self._STAB_VARIANT_COLS)
        cur = self._conn.execute(f"SELECT {cols} FROM stability_variants WHERE run_id = ? ORDER BY variant", (run_id,))
        out = [dict(zip(self._STAB_VARIANT_COLS, r, strict=True)) for r in cur]
        for v in out:
            v["figures"] = json.loads(v["figures"])
        return out

    def stability_verdicts(self, run_id: str) -> pd.DataFrame:
        """Per-item verdicts of one run: ``variant, item_id, verdict, raw``."""
        return pd.read_sql_query("SELECT variant, item_id, verdict, raw FROM stability_verdicts WHERE run_id = ? "
                                 "ORDER BY variant, item_id", self._conn, params=[run_id])
