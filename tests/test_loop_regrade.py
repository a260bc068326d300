"""judgecal regrade: the embedded judge, a new version of it run on exactly the items the old one judged."""

from __future__ import annotations

from conftest import copy_workspace

from judgecal.cli import main


def test_regrade_repeats_items_orders_and_samples_then_gates(pandalm_ws, tmp_path, capsys):
    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    w = ["-w", str(ws.path), "--quiet"]
    assert main(["judge", "--judge", "local/smollm2", "--items", "3", "--sample-seed", "4", "--orders", "AB,BA",
                 *w]) == 0
    assert main(["judge", "--judge", "local/smollm2", "--items", "2", "--sample-seed", "9", "--orders", "AB",
                 *w]) == 0
    old = ws.judgments_repo.judgments_frame("local/smollm2")
    assert len(old) >= 7  # 3 items in both orders, 2 more (or the same) in AB
    assert main(["regrade", "--judge", "local/smollm2", "--max-tokens", "3", "--like", "local/smollm2", *w]) == 0
    names = ws.judgments_repo.judges()
    new = next(n for n in names if n.startswith("local/smollm2[") and "max_tokens=3" in n)
    old_name = next(n for n in names if n.startswith("local/smollm2") and n != new)
    got = ws.judgments_repo.judgments_frame(new)
    assert set(zip(got["item_id"], got["order"], strict=True)) == set(
        zip(old["item_id"], old["order"], strict=True))
    assert len(got) == len(old)
    capsys.readouterr()
    # a second run makes no call: every judgment is cached
    assert main(["regrade", "--judge", "local/smollm2", "--max-tokens", "3", "--like", old_name, *w]) == 0
    assert " 0 run " in capsys.readouterr().out
    rc = main(["gate", "--baseline", old_name, "--candidate", new, "--consensus", "mv", "--n-boot", "200",
               "-w", str(ws.path)])
    assert rc in (0, 1)
    assert main(["regrade", "--judge", "local/smollm2", "--like", "nobody/x", *w]) == 2
    ws.close()
