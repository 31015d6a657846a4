"""Does a generated question set rank chunkers like the hand-made gold for the same documents?

    python -m bench.agreement --gold DIR --generated DIR [--docs ID,...] [--chunkers A,B,...] [--qualify]
                              [--join] [--out docs/results/agreement_NAME.json]

Both sets go through the same `core.evaluation.bench.bench_dataset` (the app's default retrieval) over the same
documents: the gold set's, or only those named by `--docs` (with the gold questions about them). The chunkers are
then ranked by MRR@10 and by Hit@5 on each set and compared (core.evaluation.agreement: Kendall's tau-b and top-1
agreement). The study's JSON holds both reports, the agreement and the generated set's README (model, prompt
version, rejections), and renders into docs/RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench import write_study
from core.workbench import DEFAULT_SPECS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agreement", description=__doc__.split("\n")[0])
    parser.add_argument("--gold", type=Path, required=True, help="qa-spans v1 folder with hand-made questions")
    parser.add_argument("--generated", type=Path, required=True, help="qa-spans v1 folder of generated questions")
    parser.add_argument("--docs", default="", help="only these documents of the gold set (comma-separated ids)")
    parser.add_argument("--chunkers", default=",".join(DEFAULT_SPECS))
    parser.add_argument("--qualify", action="store_true", help="product-named questions on both sets")
    parser.add_argument("--join", action="store_true", help="the documents as one joined stream")
    parser.add_argument("--workspace", type=Path, help="workspace folder (caches); default ~/.chunklens")
    parser.add_argument("--label", default="", help="what generated the set, as the app and RESULTS.md name it")
    parser.add_argument("--out", type=Path, help="write the study's JSON here")
    args = parser.parse_args(argv)

    from core.cli.flags import quiet_libraries
    from core.evaluation.agreement import agreement_table, report_agreement
    from core.evaluation.bench import BenchOptions, bench_dataset
    from core.infra.errors import ChunkLensError
    from core.ingest.datasets import load_dataset, select_documents
    from core.services import build_services, needs_of
    from core.settings import Settings

    quiet_libraries()
    try:
        gold = load_dataset(args.gold)
        gold_name = gold.name
        generated = load_dataset(args.generated)
        doc_ids = [d for d in args.docs.split(",") if d] or [d.doc_id for d in generated.documents]
        gold = select_documents(gold, doc_ids)
        texts = {d.doc_id: d.text for d in gold.documents}
        if any(texts.get(d.doc_id, d.text) != d.text for d in generated.documents):
            raise ChunkLensError("the generated set's documents differ from the gold set's")
        generated = select_documents(generated, doc_ids)
        specs = [s for s in args.chunkers.split(",") if s]
        settings = Settings(workspace=str(args.workspace)) if args.workspace else Settings()
        services = build_services(settings, needs=needs_of(specs))
        options = BenchOptions([1, 5, 10], args.qualify, args.join, settings.retrieval_settings())
        reports = {}
        for name, ds in (("gold", gold), ("generated", generated)):
            print(f"{name}: {len(ds.questions)} questions over {len(ds.documents)} document(s)", file=sys.stderr)
            # the per-question sources are the bulk of a report, not read here
            reports[name] = bench_dataset(ds, specs, options, services).without_sources().to_json()
        agreement = report_agreement(reports["gold"], reports["generated"])
    except ChunkLensError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    readme = args.generated / "README.md"
    study = {"command": "python -m bench.agreement " + " ".join(argv if argv is not None else sys.argv[1:]),
             "label": args.label or args.generated.name, "gold_set": gold_name, "documents": doc_ids,
             "agreement": agreement, **reports,
             "generated_readme": readme.read_text(encoding="utf-8") if readme.is_file() else ""}
    print(agreement_table(study))
    write_study(args.out, study)
    return 0


if __name__ == "__main__":
    sys.exit(main())
