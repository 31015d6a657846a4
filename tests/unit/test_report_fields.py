"""The report-fields registry: a method says how each of its fields shows (heading, direction, place, tables), and
the generic tables draw those columns from it, so no generic module names a method's key."""

from __future__ import annotations

import re

import core.catalog  # noqa: F401 - every method registered
from core.evaluation.fields import FieldShow, register_report_fields, shown_fields
from tests.support.data import ROOT

#: the modules that draw tables for every chunker: none may name a method's field
GENERIC = ["core/evaluation/report.py", "core/evaluation/bench.py", "core/evaluation/results.py",
           "core/outputs", "core/workbench", "pages", "components", "app.py"]
#: LGMGC's own trace view (the p(EOS) curve and its pass count): a method's page part, not a generic table
METHOD_VIEWS = {"components/traces.py"}


def test_no_generic_table_names_a_methods_field():
    keys = {show.key for show in shown_fields()}
    assert {"boundary_f1", "cnm_category_accuracy", "forward_passes"} <= keys
    named = []
    for where in GENERIC:
        path = ROOT / where
        for file in sorted(path.rglob("*.py") if path.is_dir() else [path]):
            if str(file.relative_to(ROOT)) in METHOD_VIEWS:
                continue
            text = file.read_text(encoding="utf-8")
            named += [f"{file.relative_to(ROOT)}: {k}" for k in keys if re.search(rf"[\"']{re.escape(k)}[\"']", text)]
    assert named == []


def test_columns_go_by_place_then_rank_and_a_method_registers_once():
    shown = shown_fields()
    places = [s.place for s in shown]
    assert places == sorted(places, key=("cost", "quality", "fidelity").index)
    quality = [s.label for s in shown_fields("quality")]
    assert quality.index("boundary F1") < quality.index("CNM category acc")
    before = len(shown)

    def extra(docs, run):
        return {"extra_field": 1}

    try:
        show = FieldShow("extra_field", "extra", place="cost", rank=-1)
        register_report_fields(shows=[show])(extra)
        register_report_fields(shows=[show])(extra)  # a module imported twice registers nothing more
        assert len(shown_fields()) == before + 1 and shown_fields("cost")[0] is show
    finally:
        from core.evaluation import fields

        fields._FIELD_SETS[:] = [s for s in fields._FIELD_SETS if s.compute is not extra]
