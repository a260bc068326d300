"""`annotate push --strategy active` on a real Label Studio server, and the audit's corrected win rates
weighing the labels of that draw by their recorded inclusion probabilities (PandaLM, its recorded judges)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import copy_workspace, free_port

from judgecal.aggregate.consensus import compute_consensus
from judgecal.audit.models import item_models, item_verdicts
from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.cli import main
from judgecal.data.records import Annotation
from judgecal.data.store import Workspace
from judgecal.stats.active import active_win_rates

GPT = "replay/pandalm/gpt-3.5-turbo"
PROJECT = "Active review"


def test_active_push_records_its_draw_and_the_audit_uses_it(pandalm_ws, tmp_path, capsys):  # type: ignore[no-untyped-def]
    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    ws.close()
    w, port = ["-w", str(tmp_path / "ws")], ["--port", str(free_port())]
    active = ["annotate", "push", "--strategy", "active", "--judge", GPT, "--budget", "30", "--overlap", "1",
              "--seed", "7", *port, *w]
    push = [*active, "--project", PROJECT]
    try:
        assert main(["annotate", "server", "start", *port, *w]) == 0
        assert main(["annotate", "annotators", "--add", "r1@example.org", *port, *w]) == 0
        capsys.readouterr()
        assert main(push) == 0
        out = capsys.readouterr().out
        assert "inclusion probability recorded" in out
        assert main(push) == 0  # pushed again: the recorded draw's items, nothing new drawn or sent
        again_out = capsys.readouterr().out
        assert "holds an active draw already" in again_out and "0 new tasks" in again_out
        random = ["annotate", "push", "--budget", "5", "--overlap", "1", "--project", "Blind review", *port, *w]
        assert main(random) == 0
        capsys.readouterr()
        assert main([*active, "--project", "Blind review"]) == 2
        assert "already holds items" in capsys.readouterr().err  # labels of unknown probability there
    finally:
        main(["annotate", "server", "stop", *port, *w])
    with Workspace(tmp_path / "ws", create=False) as again:
        draw = again.labelstudio_repo.ls_active_frame(PROJECT).set_index("item_id")
        pushed = again.labelstudio_repo.ls_pushed_items(PROJECT)
        assert again.labelstudio_repo.ls_active_frame("Blind review").empty
        # every pairwise item has its probability; the items sent are exactly the drawn ones
        assert len(draw) == len(item_models(again)) == 999
        assert pushed == set(draw.index[draw["drawn"] == 1])
        assert f"{len(pushed)} new tasks" in out
        assert abs(draw["pi"].sum() - 30) < 1e-6 and draw["pi"].between(0, 1).all()
        assert draw["pi"].nunique() > 1  # the judges disagree on some items: those are likelier
        # the people's labels of the drawn items arrive (here PandaLM's first annotator's, as a pull stores them)
        first = again.annotations_repo.annotations_frame()
        first = first[first["annotator"].astype(str).str.endswith("1")].drop_duplicates("item_id")
        first = first.set_index("item_id")["label"]
        again.annotations_repo.add_annotations([Annotation(str(i), "r1@example.org", str(first[i]), source=f"label-studio:{PROJECT}")
                               for i in sorted(pushed)])
        compute_consensus(again, ("mv",), source=f"label-studio:{PROJECT}")
        report = audit_workspace(again, AuditOptions(consensus=f"mv:label-studio:{PROJECT}", n_boot=50)).to_json()
        got = report["models"]["ppi"][GPT]
        assert got["estimator"] == "active" and got["n_labelled"] == len(pushed)
        assert got["n_drawn_without_label"] == 0
        # the same figures from the estimator itself, over the draw's items
        items = item_models(again)
        v = item_verdicts(again.judgments_repo.judgments_frame(judge=GPT))
        on = items.index.intersection(draw.index)
        h = np.array([first[i] if i in pushed else None for i in on], dtype=object)
        expect = active_win_rates(items.loc[on, "model_a"], items.loc[on, "model_b"], h,
                                  v.reindex(on).to_numpy(dtype=object), draw.loc[on, "pi"].to_numpy())
    for model, row in expect.iterrows():
        assert got["win_rate"][model]["estimate"] == pytest.approx(row["estimate"])
        assert got["win_rate"][model]["ci_high"] == pytest.approx(row["ci_high"])
