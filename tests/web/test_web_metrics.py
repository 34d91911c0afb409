from __future__ import annotations

import re

from bot.web.metrics import CONTENT_TYPE, LATENCY_BUCKETS_S, Metrics

# One sample line of the text format: name, optional labels, value.
SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\["\\n])*",?)*\})? \S+$')


def test_empty_metrics_still_declare_every_family() -> None:
    text = Metrics().render()
    for name, kind in (("rigcheck_commands_total", "counter"), ("rigcheck_cache_hits_total", "counter"),
                       ("rigcheck_cache_misses_total", "counter"), ("rigcheck_command_latency_seconds", "histogram"),
                       ("rigcheck_deliveries_total", "counter")):
        assert f"# TYPE {name} {kind}\n" in text
    assert "rigcheck_cache_hits_total 0\n" in text
    assert text.endswith("\n")
    assert "version=0.0.4" in CONTENT_TYPE


def test_counters_histogram_and_label_escaping() -> None:
    m = Metrics()
    m.command("fit", "ok")
    m.command("fit", "ok")
    m.command('we"ird\\name\n', "error")
    m.observe("fit", 0.02, cache_hit=True)
    m.observe("fit", 0.3, cache_hit=False)
    m.observe("fit", 30.0, cache_hit=False)
    m.delivery("sent")
    m.delivery("disabled")
    text = m.render()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert all(SAMPLE.match(line) for line in lines), [line for line in lines if not SAMPLE.match(line)]
    assert 'rigcheck_commands_total{command="fit",outcome="ok"} 2' in lines
    assert 'rigcheck_commands_total{command="we\\"ird\\\\name\\n",outcome="error"} 1' in lines
    assert "rigcheck_cache_hits_total 1" in lines and "rigcheck_cache_misses_total 2" in lines
    buckets = [line for line in lines if line.startswith("rigcheck_command_latency_seconds_bucket")]
    assert len(buckets) == len(LATENCY_BUCKETS_S) + 1
    counts = [int(line.rsplit(" ", 1)[1]) for line in buckets]
    assert counts == sorted(counts), "buckets are cumulative"
    assert 'rigcheck_command_latency_seconds_bucket{command="fit",le="0.025"} 1' in lines
    assert 'rigcheck_command_latency_seconds_bucket{command="fit",le="0.5"} 2' in lines
    assert 'rigcheck_command_latency_seconds_bucket{command="fit",le="10"} 2' in lines
    assert 'rigcheck_command_latency_seconds_bucket{command="fit",le="+Inf"} 3' in lines
    assert 'rigcheck_command_latency_seconds_count{command="fit"} 3' in lines
    (total,) = [line for line in lines if line.startswith("rigcheck_command_latency_seconds_sum")]
    assert abs(float(total.rsplit(" ", 1)[1]) - 30.32) < 1e-9
    assert 'rigcheck_deliveries_total{outcome="disabled"} 1' in lines
    # Every family's HELP and TYPE come before its samples, once.
    assert text.count("# TYPE rigcheck_command_latency_seconds histogram") == 1
