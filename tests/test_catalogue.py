"""The metric catalogue and the one number format every surface uses."""

import math

from judgecal.catalogue import METRICS, fmt_interval, fmt_metric, fmt_number, fmt_p, info


def test_formats():
    assert fmt_interval(0.71, 0.68, 0.74) == "0.710 (0.680–0.740)"
    assert fmt_interval(0.71, None, None) == "0.710"
    assert fmt_number(None) == "n/a" and fmt_number(math.nan) == "n/a"
    assert fmt_p(7.8e-13) == "< 0.001" and fmt_p(0.0123) == "0.012" and fmt_p(None) == "not tested"


def test_every_entry_is_complete():
    for name, m in METRICS.items():
        assert m.name == name
        assert m.title and m.definition.endswith("."), name
        assert m.good in ("higher", "lower", "closer to the reference"), name
    assert info("something_new").title == "something new"


def test_absent_and_undefined_metrics_read_differently():
    assert fmt_metric(None) == fmt_metric({}) == "not tested"  # the probe did not run
    assert fmt_metric({"estimate": None, "ci_low": None, "ci_high": None, "n": 3}) == "undefined"  # 0/0
