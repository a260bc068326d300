"""The explorer's read-only queries (apps/): one page's summary or one item at a time, never every
judgment to show one item; raw judge output and item texts are read only for the item shown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from judgecal.data.records import SPAN_FIELDS, Item
from judgecal.data.store._db import Database, Repository
from judgecal.data.store.judgments import JudgmentsRepository


class ExplorerRepository(Repository):
    """Every ``explorer_*`` query (read only; judges named as :meth:`JudgmentsRepository.judge_names`)."""

    def __init__(self, db: Database, judgments: JudgmentsRepository) -> None:
        super().__init__(db)
        self._judgments = judgments

    def explorer_items_index(self) -> pd.DataFrame:
        """One row per item, no texts: ``item_id, source, task, category, model_a, model_b``."""
        q = ("SELECT item_id, source, task, json_extract(data, '$.metadata.category'), "
             "json_extract(data, '$.candidates[0].model'), json_extract(data, '$.candidates[1].model') "
             "FROM items ORDER BY rowid")
        return pd.DataFrame(self._conn.execute(q).fetchall(),
                            columns=["item_id", "source", "task", "category", "model_a", "model_b"])

    def explorer_item(self, item_id: str) -> Item | None:
        row = self._conn.execute("SELECT data FROM items WHERE item_id = ?", (item_id,)).fetchone()
        return Item.from_json(row[0]) if row else None

    def explorer_item_judgments(self, item_id: str,
                                names: Mapping[tuple[str, str], str] | None = None) -> pd.DataFrame:
        """Every judgment of one item (through the item index), raw text kept; each judge named per spec by
        ``names`` (:meth:`judge_names`, which reads every judgment: pass it once, cached)."""
        names = self._judgments.judge_names() if names is None else names
        df = pd.read_sql_query('SELECT judge, spec_hash, "order", mutation, sample, verdict, score, status, raw, '
                               "latency_s, cost_usd FROM judgments WHERE item_id = ? "
                               'ORDER BY judge, mutation, sample, "order"', self._conn, params=[item_id])
        df["judge"] = [names.get((j, h), j) for j, h in zip(df["judge"], df["spec_hash"], strict=True)]
        return df.drop(columns=["spec_hash"])

    def explorer_item_annotations(self, item_id: str) -> pd.DataFrame:
        return pd.read_sql_query("SELECT annotator, label, rationale, shown_order, time_spent_s, source FROM annotations "
                                 "WHERE item_id = ? ORDER BY rowid", self._conn, params=[item_id])

    def explorer_item_consensus(self, item_id: str) -> pd.DataFrame:
        return pd.read_sql_query("SELECT method, label, posterior FROM consensus WHERE item_id = ? ORDER BY method",
                                 self._conn, params=[item_id])

    def explorer_item_spans(self, item_id: str) -> pd.DataFrame:
        cols = ", ".join(f'"{f}"' for f in SPAN_FIELDS)
        return pd.read_sql_query(f"SELECT {cols} FROM spans WHERE item_id = ? ORDER BY rowid", self._conn,
                                 params=[item_id])

    def explorer_verdicts(self, judge: str | None = None) -> pd.DataFrame:
        """Per (item, judge): the verdict of the first sample of the unmutated prompt in each order
        (``AB``, ``BA``; ``None`` where not judged). No raw text is read. ``judge``: that judge only (a seek
        in the ``judgments_explorer`` index instead of a pass over every judgment)."""
        names = self._judgments.judge_names()
        where, args = "WHERE mutation = 'none' AND sample = 0", []
        if judge is not None:
            pairs = [pair for pair, n in names.items() if n == judge]
            where += " AND (" + (" OR ".join("(judge = ? AND spec_hash = ?)" for _ in pairs) or "0") + ")"
            args = [x for pair in pairs for x in pair]
        q = ("SELECT item_id, judge, spec_hash, MAX(CASE WHEN \"order\" = 'AB' THEN verdict END), "
             f"MAX(CASE WHEN \"order\" = 'BA' THEN verdict END) FROM judgments {where} "
             "GROUP BY judge, spec_hash, item_id")
        df = pd.DataFrame(self._conn.execute(q, args).fetchall(), columns=["item_id", "judge", "spec_hash", "AB", "BA"])
        df["judge"] = [names.get((j, h), j) for j, h in zip(df["judge"], df["spec_hash"], strict=True)]
        return df.drop(columns=["spec_hash"])

    def explorer_label_sources(self) -> pd.DataFrame:
        """``item_id, source`` of the human labels, each pair once."""
        return pd.read_sql_query("SELECT DISTINCT item_id, source FROM annotations", self._conn)

    def explorer_span_items(self) -> pd.DataFrame:
        """``item_id, kind`` of the items with spans (a rater's empty mark counts as looked at)."""
        return pd.read_sql_query("SELECT DISTINCT item_id, kind FROM spans", self._conn)

    # The Items page's item verdict (the audit's judgecal.audit.models.item_verdicts, invalid as a tie), in SQL over
    # columns ``ab`` and ``ba``: the two orders' common verdict, a tie when they differ, the one order's
    # verdict when only one was judged; ``invalid`` counts as a tie.
    _ITEM_VERDICT = ("CASE WHEN ab IS NULL THEN {b} WHEN ba IS NULL THEN {a} WHEN {a} = {b} THEN {a} ELSE 'tie' END"
                     .format(a="(CASE WHEN ab = 'invalid' THEN 'tie' ELSE ab END)",
                             b="(CASE WHEN ba = 'invalid' THEN 'tie' ELSE ba END)"))
    _ORDERS = ("MAX(CASE WHEN \"order\" = 'AB' THEN verdict END) AS ab, "
               "MAX(CASE WHEN \"order\" = 'BA' THEN verdict END) AS ba")
    _CATEGORY = "json_extract(data, '$.metadata.category')"  # the expressions of the items_* indexes
    _MODELS = ("json_extract(data, '$.candidates[0].model')", "json_extract(data, '$.candidates[1].model')")

    def explorer_judges(self) -> list[str]:
        """The judges (named per spec) with a verdict on the unmutated prompt (what the Items page shows)."""
        q = "SELECT 1 FROM judgments WHERE mutation = 'none' AND sample = 0 AND judge IS ? AND spec_hash IS ? LIMIT 1"
        return sorted({n for pair, n in self._judgments.judge_names().items()
                       if self._conn.execute(q, pair).fetchone()})

    def explorer_categories(self) -> list[Any]:
        """Every distinct ``metadata.category`` of the items, as stored (text or a number), read from its index."""
        return [r[0] for r in self._conn.execute(f"SELECT DISTINCT {self._CATEGORY} FROM items "
                                                 f"WHERE {self._CATEGORY} IS NOT NULL")]

    def explorer_models(self) -> list[Any]:
        """Every distinct model of the items' first two candidates, read from their indexes."""
        found = [r[0] for m in self._MODELS for r in self._conn.execute(f"SELECT DISTINCT {m} FROM items "
                                                                        f"WHERE {m} IS NOT NULL")]
        return list(dict.fromkeys(found))

    def explorer_label_source_names(self) -> list[str]:
        """Every source of a human label, sorted."""
        return [r[0] for r in self._conn.execute("SELECT DISTINCT source FROM annotations ORDER BY source")]

    def explorer_find_items(self, judge: str | None, consensus: str | None, *, humans: bool = False,
                            orders: bool = False, judges: bool = False, spans: bool = False,
                            categories: Sequence[Any] = (), models: Sequence[Any] = (),
                            label_sources: Sequence[str] = (), limit: int = 200) -> tuple[int, pd.DataFrame]:
        """The Items page's selection, made in SQLite: how many items match, and the first ``limit`` of them,
        shortest ids first (numeric ids then read in order).

        The items ``judge`` judged (every item when None), each with ``source, task, category, model_a,
        model_b``, the judge's verdict in each order (``judge AB``, ``judge BA``: the first sample of the
        unmutated prompt; only with a judge) and ``humans``, the label of consensus ``consensus`` (of the
        method before its ``:`` when that one has no rows). Filters, all of which must hold: ``humans`` the
        judge's item verdict (:attr:`_ITEM_VERDICT`) is not the humans' label; ``orders`` its two orders'
        verdicts differ; ``judges`` the judges' (each spec's) item verdicts on the item are not all the same;
        ``spans`` someone marked a span on it; ``categories`` its ``metadata.category`` is one of these;
        ``models`` either candidate's model is; ``label_sources`` a human label of it comes from one of
        these. ``humans`` and ``orders`` apply only with a judge.
        """
        cols = ["item_id", "source", "task", "category", "model_a", "model_b",
                *(["judge AB", "judge BA"] if judge is not None else []), "humans"]
        args: list[Any] = []
        if judge is None:
            mine = "SELECT item_id, NULL AS ab, NULL AS ba FROM items"
        else:
            pairs = [pair for pair, n in self._judgments.judge_names().items() if n == judge]
            if not pairs:
                return 0, pd.DataFrame(columns=cols)
            one = "FROM judgments WHERE mutation = 'none' AND sample = 0 AND judge IS ? AND spec_hash IS ?"
            mine = (f"SELECT item_id, {self._ORDERS} {one} GROUP BY item_id" if len(pairs) == 1 else
                    f"SELECT item_id, {self._ORDERS} FROM ("
                    + " UNION ALL ".join(f'SELECT item_id, "order", verdict {one}' for _ in pairs)
                    + ") GROUP BY item_id")
            args += [x for pair in pairs for x in pair]
        if consensus is not None and ":" in consensus and self._conn.execute(
                "SELECT 1 FROM consensus WHERE method = ? LIMIT 1", (consensus,)).fetchone() is None:
            consensus = consensus.split(":")[0]
        where: list[str] = []
        join = ""
        if humans and judge is not None:
            join = " JOIN consensus c ON c.item_id = m.item_id AND c.method = ?"
            args.append(consensus)
            where.append(f"({self._ITEM_VERDICT}) IS NOT c.label")
        if orders and judge is not None:
            where.append("m.ab IS NOT NULL AND m.ba IS NOT NULL AND m.ab <> m.ba")
        if judges:
            each = (f"SELECT item_id, {self._ORDERS} FROM judgments WHERE mutation = 'none' AND sample = 0 "
                    "GROUP BY judge, spec_hash, item_id")
            where.append(f"m.item_id IN (SELECT item_id FROM (SELECT item_id, {self._ITEM_VERDICT} AS v FROM ({each})) "
                         "GROUP BY item_id HAVING MIN(v) <> MAX(v))")
        if spans:
            where.append("EXISTS (SELECT 1 FROM spans s WHERE s.item_id = m.item_id)")
        if categories:
            where.append(f"m.item_id IN (SELECT item_id FROM items WHERE {self._CATEGORY} IN "
                         f"({', '.join('?' for _ in categories)}))")
            args += list(categories)
        if models:
            marks = ", ".join("?" for _ in models)
            where.append("(" + " OR ".join(f"m.item_id IN (SELECT item_id FROM items WHERE {m} IN ({marks}))"
                                           for m in self._MODELS) + ")")
            args += list(models) * len(self._MODELS)
        if label_sources:
            where.append("EXISTS (SELECT 1 FROM annotations a WHERE a.item_id = m.item_id AND a.source IN "
                         f"({', '.join('?' for _ in label_sources)}))")
            args += list(label_sources)
        hit = (f"SELECT m.item_id, m.ab, m.ba FROM ({mine}) m JOIN items i ON i.item_id = m.item_id{join}"
               + "".join(f" {'WHERE' if k == 0 else 'AND'} {w}" for k, w in enumerate(where)))
        q = (f"WITH hit AS MATERIALIZED ({hit}) "
             f"SELECT h.item_id, i.source, i.task, {self._CATEGORY}, {self._MODELS[0]}, {self._MODELS[1]}, h.ab, h.ba, "
             "c.label, (SELECT COUNT(*) FROM hit) FROM (SELECT * FROM hit ORDER BY length(item_id), item_id LIMIT ?) h "
             "JOIN items i ON i.item_id = h.item_id LEFT JOIN consensus c ON c.item_id = h.item_id AND c.method = ? "
             "ORDER BY length(h.item_id), h.item_id")
        rows = self._conn.execute(q, [*args, limit, consensus]).fetchall()
        found = pd.DataFrame([r[:9] for r in rows], columns=["item_id", "source", "task", "category", "model_a",
                                                             "model_b", "judge AB", "judge BA", "humans"])
        return (int(rows[0][9]) if rows else 0), found[cols]
