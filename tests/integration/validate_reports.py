"""Every report.json a run wrote, against docs/report.schema.json: validate_reports.py PATH...

  PATH    a report.json, a run directory, or a directory of runs (every report.json below it, at any depth)

The schema's own draft ($schema: 2020-12) decides the validator. Prints one line per report that validates
(``PATH: OK``). Exits 1 when a report does not validate (each error: the report, the JSON path in it, the schema's
message and where in the schema), is not JSON, or when a PATH holds no report.json at all; exits 2 when nothing can
be validated: jsonschema is not importable (it is pinned in requirements-test.txt), the schema cannot be read, no
PATH was given. The integration targets (tests/integration/targets/*/runme.sh) and the VM tier (tests/vmlab/run.sh)
run it on the run directories they made; check_chaos.py imports ``report_errors``.
"""
import json
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCHEMA = os.path.join(ROOT, "docs", "report.schema.json")
SHOWN = 20  # errors printed per report; the rest are counted


class CannotValidate(Exception):
    """Nothing can be validated (exit 2)."""


def load_validator(schema_path=SCHEMA):
    """The validator of the schema's declared draft, the schema itself checked against that draft."""
    try:
        import jsonschema
    except ImportError as exc:
        raise CannotValidate("jsonschema is not importable (%s) by %s: it is pinned in requirements-test.txt "
                             "(pip install -c constraints.txt -r requirements-test.txt, or make setup-test)"
                             % (exc, sys.executable)) from exc
    try:
        with open(schema_path) as handle:
            schema = json.load(handle)
    except (OSError, ValueError) as exc:
        raise CannotValidate("cannot read the schema %s: %s" % (schema_path, exc)) from exc
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise CannotValidate("%s is not a valid %s schema: %s" % (schema_path, cls.__name__, exc.message)) from exc
    return cls(schema)


def report_errors(report, validator):
    """``[(json_path, message, schema_path)]`` for everything in ``report`` (parsed JSON) the schema refuses, in
    document order; ``[]`` when it validates."""
    errors = sorted(validator.iter_errors(report), key=lambda e: [str(p) for p in e.absolute_path])
    return [(e.json_path, e.message, "/".join(str(p) for p in e.absolute_schema_path)) for e in errors]


def find_reports(path):
    """The report.json files ``path`` names: itself, or every one below the directory, sorted."""
    if os.path.isfile(path):
        return [path]
    found = []
    for top, dirs, files in os.walk(path):
        dirs.sort()
        if "report.json" in files:
            found.append(os.path.join(top, "report.json"))
    return found


def validate_paths(paths, validator, out=None, err=None):
    """Every report under ``paths``, one line each (``out``, ``err``: sys.stdout and sys.stderr); the number of
    reports and paths that failed."""
    out, err = out or sys.stdout, err or sys.stderr
    failed = 0
    for path in paths:
        if not os.path.exists(path):
            print("%s: FAILED: no such file or directory" % path, file=err)
            failed += 1
            continue
        reports = find_reports(path)
        if not reports:
            print("%s: FAILED: no report.json in it or below it" % path, file=err)
            failed += 1
        for report_path in reports:
            try:
                with open(report_path) as handle:
                    report = json.load(handle)
            except (OSError, ValueError) as exc:
                print("%s: FAILED: not a JSON file: %s" % (report_path, exc), file=err)
                failed += 1
                continue
            errors = report_errors(report, validator)
            if not errors:
                print("%s: OK" % report_path, file=out)
                continue
            failed += 1
            print("%s: FAILED: %d error(s) against %s" % (report_path, len(errors), os.path.relpath(SCHEMA, ROOT)),
                  file=err)
            for json_path, message, schema_path in errors[:SHOWN]:
                print("  %s: %s (schema: %s)" % (json_path, message, schema_path or "/"), file=err)
            if len(errors) > SHOWN:
                print("  ... and %d more" % (len(errors) - SHOWN), file=err)
    return failed


def main(argv=None):
    paths = sys.argv[1:] if argv is None else argv
    if not paths or paths[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        validator = load_validator()
    except CannotValidate as exc:
        print("validate_reports: %s" % exc, file=sys.stderr)
        return 2
    failed = validate_paths(paths, validator)
    if failed:
        print("validate_reports: %d report(s) or path(s) FAILED against %s" % (failed, SCHEMA), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
