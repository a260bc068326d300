"""The workspace database's schema (SQL text only; :mod:`._db` creates and migrates it): its version, the
migrations, and the tables of each area."""

from __future__ import annotations

from judgecal.data.records import ANNOTATION_FIELDS, JUDGMENT_FIELDS

SCHEMA_VERSION = 10
# Additive migrations: version -> what it adds (the CREATE TABLE IF NOT EXISTS below does the work;
# _MIGRATION_SQL holds the data a version copies forward, if any).
MIGRATIONS = {2: "Label Studio task mapping (ls_tasks) and pulled annotation ids (ls_pulled)",
              3: "Label Studio per-annotator projects (ls_projects), task copies (ls_copies), pulled labels (ls_labels)",
              4: "judge specs (judge_specs) and the (judge, spec_hash) index of judgments",
              5: "human and judge spans (spans)",
              6: "stability runs, their variants and per-item verdicts (stability_*)",
              7: "annotators' rationales (annotations.rationale)",
              8: "a label judge's label probabilities (judgments.p_labels)",
              9: "when a verdict was given (judgments.time, judgments.period)",
              10: "active labelling's inclusion probabilities and draws (ls_active)"}

_JUDGMENT_TYPES = {
    "key": "TEXT PRIMARY KEY",
    "sample": "INTEGER",
    "seed": "INTEGER",
    "score": "REAL",
    "p_a": "REAL",
    "p_b": "REAL",
    "p_tie": "REAL",
    "expected_score": "REAL",
    "prompt_tokens": "INTEGER",
    "completion_tokens": "INTEGER",
    "latency_s": "REAL",
    "cost_usd": "REAL",
    "created_at": "REAL",
}

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    item_id TEXT PRIMARY KEY, source TEXT NOT NULL, task TEXT NOT NULL, data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS judgments (
    {", ".join(f'"{f}" {_JUDGMENT_TYPES.get(f, "TEXT")}' for f in JUDGMENT_FIELDS)}
);
CREATE INDEX IF NOT EXISTS judgments_judge ON judgments (judge);
CREATE INDEX IF NOT EXISTS judgments_item ON judgments (item_id);
CREATE TABLE IF NOT EXISTS annotations (
    {", ".join(f"{f} {'REAL' if f == 'time_spent_s' else 'TEXT'}" for f in ANNOTATION_FIELDS)},
    UNIQUE (item_id, annotator, source)
);
CREATE TABLE IF NOT EXISTS ls_tasks (
    task_key TEXT PRIMARY KEY, project TEXT NOT NULL, project_id INTEGER NOT NULL, item_id TEXT NOT NULL,
    flipped INTEGER NOT NULL, gold_label TEXT, task_id INTEGER, pushed_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ls_tasks_item ON ls_tasks (project, item_id);
CREATE TABLE IF NOT EXISTS ls_pulled (
    annotation_id INTEGER NOT NULL, project_id INTEGER NOT NULL, updated_at TEXT NOT NULL,
    status TEXT NOT NULL, PRIMARY KEY (project_id, annotation_id)
);
CREATE TABLE IF NOT EXISTS consensus (
    item_id TEXT NOT NULL, method TEXT NOT NULL, label TEXT NOT NULL, posterior TEXT NOT NULL,
    PRIMARY KEY (item_id, method)
);
"""

# -- Label Studio state (read and written only through labelstudio.LabelStudioRepository) ----------
# ls_projects: one Label Studio project per (judgecal project, annotator); annotator '' = one shared project.
# ls_copies: one row per task sent (an item's copy for one annotator), with its opaque key, A/B flip,
#            gold answer and where it came from, and its place in that annotator's random order.
# ls_active: an active push's draw (annotate push --strategy active): every item it could have drawn, with its
#            inclusion probability pi and whether it was drawn; the corrected estimates weigh labels by 1 / pi.
# ls_labels: every annotation pulled, who made it (completed_by) and who last changed it (updated_by),
#            the choice as shown (e.g. both_bad), and whether it was ok, cancelled, rejected, flagged or since
#            deleted by its annotator (withdrawn by the pull that found it gone).
_LS_SCHEMA = """
CREATE TABLE IF NOT EXISTS ls_projects (
    project TEXT NOT NULL, annotator TEXT NOT NULL, project_id INTEGER NOT NULL, org_id INTEGER,
    overlap INTEGER NOT NULL, seed INTEGER NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (project, annotator)
);
CREATE TABLE IF NOT EXISTS ls_copies (
    task_key TEXT PRIMARY KEY, project TEXT NOT NULL, annotator TEXT NOT NULL, project_id INTEGER NOT NULL,
    item_id TEXT NOT NULL, flipped INTEGER NOT NULL, gold_label TEXT, gold_from TEXT, position INTEGER NOT NULL,
    pushed_at REAL NOT NULL, UNIQUE (project, annotator, item_id)
);
CREATE TABLE IF NOT EXISTS ls_active (
    project TEXT NOT NULL, item_id TEXT NOT NULL, pi REAL NOT NULL, drawn INTEGER NOT NULL, seed INTEGER NOT NULL,
    tau REAL NOT NULL, budget INTEGER NOT NULL, judge TEXT, drawn_at REAL NOT NULL, PRIMARY KEY (project, item_id)
);
CREATE TABLE IF NOT EXISTS ls_labels (
    project_id INTEGER NOT NULL, annotation_id INTEGER NOT NULL, task_key TEXT, item_id TEXT, annotator TEXT,
    completed_by TEXT, updated_by TEXT, choice TEXT, status TEXT NOT NULL, note TEXT, updated_at TEXT NOT NULL,
    PRIMARY KEY (project_id, annotation_id)
);
"""
_MIGRATION_SQL: dict[int, tuple[str, ...]] = {3: (
    "INSERT OR IGNORE INTO ls_copies SELECT task_key, project, '', project_id, item_id, flipped, gold_label, "
    "NULL, rowid, pushed_at FROM ls_tasks",
    "INSERT OR IGNORE INTO ls_projects SELECT project, '', project_id, NULL, 0, 0, MIN(pushed_at) FROM ls_tasks "
    "GROUP BY project, project_id",
    "INSERT OR IGNORE INTO ls_labels (project_id, annotation_id, status, updated_at) "
    "SELECT project_id, annotation_id, status, updated_at FROM ls_pulled",
)}

# -- judge-call claims: concurrent judge runs on one workspace never make the same call twice ------------
# runs: one row per live judge run (a random owner id, its pid and host, a heartbeat it refreshes);
# claims: the call keys a run is making. Not data: both are emptied as runs end or die.
_CLAIMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (owner TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL,
                                 heartbeat REAL NOT NULL);
CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL);
"""

# -- judge specs: a judge is a spec (backend, model, rubric, every output-changing parameter) -----------
# judge_specs: each spec once, its hash -> base name and JSON (judgecal.judges.spec). A judgment keeps its
# spec's base name (judgments.judge) and hash (judgments.spec_hash); judge_names() gives each spec its own
# readable name, which is what the judgments frame shows, so no consumer ever pools two specs.
_SPECS_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_specs (spec_hash TEXT PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL,
                                        created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS judgments_judge_spec ON judgments (judge, spec_hash);
"""

# -- spans: marked stretches of a candidate's text, by people and judges (see records.Span) ---------------
# One row per span; a rater who marked nothing on an item has one empty span (start = end = 0). Written and
# read only through spans.SpansRepository.
_SPANS_SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (
    item_id TEXT NOT NULL, rater TEXT NOT NULL, candidate INTEGER NOT NULL, start INTEGER NOT NULL,
    "end" INTEGER NOT NULL, label TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL, score REAL, note TEXT,
    UNIQUE (item_id, rater, candidate, start, "end", label, source, kind)
);
CREATE INDEX IF NOT EXISTS spans_item ON spans (item_id);
"""

# -- Stability: runs of one judge over variants (seed, temperature, mutation, ..., backend, GPU) -----------
# A run has variants; each variant is one judgment set (or reuses another variant's, ``reused_from``) with
# its headline figures (JSON) and environment fingerprint; per item its swap-debiased verdict and raw
# outputs, so scores, bootstrap CIs and the guard's diff report are recomputed from the workspace alone.
# Written and read only through stability.StabilityRepository.
_STABILITY_SCHEMA = """
CREATE TABLE IF NOT EXISTS stability_runs (
    run_id TEXT PRIMARY KEY, judge TEXT NOT NULL, spec_hash TEXT, origin TEXT NOT NULL, created_at REAL NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS stability_variants (
    run_id TEXT NOT NULL, variant INTEGER NOT NULL, name TEXT NOT NULL, axis TEXT NOT NULL, level TEXT NOT NULL,
    spec_hash TEXT, reused_from INTEGER, calls INTEGER NOT NULL, paid INTEGER NOT NULL, env TEXT, prompt TEXT,
    figures TEXT NOT NULL, PRIMARY KEY (run_id, variant)
);
CREATE TABLE IF NOT EXISTS stability_verdicts (
    run_id TEXT NOT NULL, variant INTEGER NOT NULL, item_id TEXT NOT NULL, verdict TEXT, raw TEXT,
    PRIMARY KEY (run_id, variant, item_id)
);
"""

# -- Write tokens (meta '<table>_version') of the tables the columnar copies of snapshot.py are made from ----
# The store's writers (add_judgments, add_items) draw a new random token once per batch; these triggers draw one
# for a change made any other way (an UPDATE or DELETE by hand; an insert from outside takes a new, larger rowid).
_SNAPSHOT_SCHEMA = "".join(f"""
CREATE TRIGGER IF NOT EXISTS {table}_{verb.lower()}d AFTER {verb} ON {table} BEGIN
    INSERT INTO meta (key, value) VALUES ('{table}_version', lower(hex(randomblob(8))))
    ON CONFLICT (key) DO UPDATE SET value = lower(hex(randomblob(8)));
END;""" for table in ("judgments", "items") for verb in ("UPDATE", "DELETE"))

# -- Explorer indexes (read by explorer.ExplorerRepository; no data of their own, so no migration) -----
# judgments_explorer covers the item verdicts the Items page filters on (the first sample of the unmutated
# prompt, per judge and item, in each order): one judge's verdicts are one index range read in item order,
# every judge's one index scan. The items_* expression indexes hold the Items page's filter values.
_EXPLORER_SCHEMA = """
CREATE INDEX IF NOT EXISTS judgments_explorer ON judgments (mutation, sample, judge, spec_hash, item_id, "order",
                                                            verdict);
CREATE INDEX IF NOT EXISTS items_category ON items (json_extract(data, '$.metadata.category'));
CREATE INDEX IF NOT EXISTS items_model_a ON items (json_extract(data, '$.candidates[0].model'));
CREATE INDEX IF NOT EXISTS items_model_b ON items (json_extract(data, '$.candidates[1].model'));
"""

