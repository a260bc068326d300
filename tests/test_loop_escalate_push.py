"""`annotate push --strategy escalate` sends a cascade's last stage to people: a real Label Studio server."""

from __future__ import annotations

import json

from conftest import copy_workspace, free_port

from judgecal.cli import main
from judgecal.loop.panel import make_panel, run_panel

GPT, P7B = "replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"


def test_the_people_stage_of_a_cascade_goes_to_label_studio(pandalm_ws, tmp_path, capsys):
    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    run_panel(ws, make_panel([GPT, P7B], name="duo"))
    ws.close()
    w, port = ["-w", str(tmp_path / "ws")], ["--port", str(free_port())]
    assert main(["cascade", "--stage", "duo", "--stage", GPT, "--target", "0.6", "--consensus", "mv",
                 "--name", "duo-then-gpt", *w]) == 0
    escalated = json.loads((tmp_path / "ws" / "reports" / "cascade.json").read_text())["duo-then-gpt"]["escalated"]
    assert 0 < len(escalated) < 999
    try:
        assert main(["annotate", "server", "start", *port, *w]) == 0
        assert main(["annotate", "annotators", "--add", "r1@example.org", *port, *w]) == 0
        capsys.readouterr()
        assert main(["annotate", "push", "--strategy", "escalate", "--judge", "duo-then-gpt", "--budget", "6",
                     "--overlap", "1", *port, *w]) == 0
        assert "6 new tasks" in capsys.readouterr().out
    finally:
        main(["annotate", "server", "stop", *port, *w])
    from judgecal.data.store import Workspace

    with Workspace(tmp_path / "ws", create=False) as again:
        pushed = again.labelstudio_repo.ls_pushed_items()
    assert len(pushed) == 6 and pushed <= set(escalated)
    # least confident first: every pushed item scores at least as high as any escalated item left behind
    left = [s for i, s in escalated.items() if i not in pushed]
    assert min(escalated[i] for i in pushed) >= max(left)
