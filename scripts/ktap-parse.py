#!/usr/bin/env python3
"""Parse a KTAP version 1 document and judge it, as `kunit.py parse` does.

usage: ktap-parse.py [--name NAME] [--expect A,B,C] FILE

The document is read from FILE (a guest's KTAP channel, a host script's
log); lines before its first top-level "KTAP version 1" and lines that are
not KTAP are ignored. Judged:

- the top-level plan must come before any result, and the results must be
  numbered 1..N in order and be as many as the plan says; each result the
  plan promised and the document does not have (a guest that died in the
  middle) is a failure;
- with --expect, the top-level results must carry exactly those names in
  that order (the registry's list of checks for that boot);
- a subtest's plan, where it has one (KUnit's do), must match its results;
- a "not ok" result whose subtest has no failing result of its own (a check
  that printed no result, returned non-zero or never came back) is a failure;
- an "ok" result whose subtest printed no result is a failure.

Leaf results are counted: "ok" passes, "ok ... # SKIP" is skipped, "not ok"
fails. Every failure is printed as a "not ok - NAME: path: reason" line; the
last line is "NAME: P passed, F failed, S skipped". Exit status 1 when
anything failed, 0 otherwise.
"""

import argparse
import re
import sys

VERSION = re.compile(r"^(\s*)KTAP version 1\s*$")
SUBTEST = re.compile(r"^(\s*)# Subtest: (.*)$")
PLAN = re.compile(r"^(\s*)1\.\.(\d+)\s*$")
RESULT = re.compile(r"^(\s*)(ok|not ok) (\d+)(?: -)?(?: ([^#]*))?(?:#\s*(.*))?$")


class Test:
    """One test: its name, plan, results and, per result, a subtest."""

    def __init__(self, name, indent):
        self.name = name
        self.indent = indent
        self.plan = None
        self.plan_late = False
        self.results = []   # (number, ok, name, directive, subtest or None)


def classify(lines):
    """Yield (indent, kind, match) for each KTAP line; others are dropped."""
    for line in lines:
        line = line.rstrip("\r\n").replace("\r", "")
        for kind, pattern in (("version", VERSION), ("subtest", SUBTEST),
                              ("plan", PLAN), ("result", RESULT)):
            m = pattern.match(line)
            if m:
                yield len(m.group(1).expandtabs()), kind, m
                break


def parse_block(items, pos, indent, name):
    """Parse the test at INDENT starting at items[pos]; return (test, pos)."""
    test = Test(name, indent)
    pending = None
    while pos < len(items):
        ind, kind, m = items[pos]
        if ind < indent:
            break
        if ind > indent:
            if kind in ("version", "subtest"):
                sub_name = m.group(2).strip() if kind == "subtest" else None
                pending, pos = parse_block(items, pos, ind, sub_name)
                continue
            pos += 1        # a stray deeper line: not ours
            continue
        if kind == "version":
            if test.results or test.plan is not None:
                break       # a new document at this level
        elif kind == "subtest":
            if test.results:
                break
            test.name = m.group(2).strip()
        elif kind == "plan":
            if test.plan is None:
                test.plan = int(m.group(2))
                test.plan_late = bool(test.results)
        else:
            desc = (m.group(4) or "").strip()
            directive = (m.group(5) or "").strip()
            if pending is not None and pending.name is None:
                pending.name = desc
            test.results.append((int(m.group(3)), m.group(2) == "ok",
                                 desc, directive, pending))
            pending = None
        pos += 1
    return test, pos


class Verdict:
    def __init__(self, name):
        self.name = name
        self.passed = self.failed = self.skipped = 0

    def fail(self, path, reason):
        self.failed += 1
        print(f"not ok - {self.name}: {path}: {reason}")


def judge(test, verdict, path, top=False):
    """Count TEST's leaves into VERDICT; return True if anything failed."""
    bad = False
    numbers = [r[0] for r in test.results]
    if test.plan is None:
        if top:
            verdict.fail(path, "no plan before the results")
            bad = True
    else:
        if test.plan_late:
            verdict.fail(path, f"plan 1..{test.plan} printed after results")
            bad = True
        if len(test.results) != test.plan:
            missing = test.plan - len(test.results)
            if missing > 0:
                for _ in range(missing):
                    verdict.fail(path, f"planned {test.plan} results, got "
                                 f"{len(test.results)}: a result is missing")
            else:
                verdict.fail(path, f"planned {test.plan} results, got "
                             f"{len(test.results)}")
            bad = True
    if numbers != list(range(1, len(numbers) + 1)):
        verdict.fail(path, f"results numbered {numbers}, not 1..{len(numbers)}")
        bad = True
    for number, ok, name, directive, sub in test.results:
        where = f"{path}/{name or number}"
        skip = directive.upper().startswith("SKIP")
        if sub is None:
            if skip and ok:
                verdict.skipped += 1
            elif ok:
                verdict.passed += 1
            else:
                verdict.fail(where, directive or "not ok")
                bad = True
            continue
        sub_bad = judge(sub, verdict, where)
        if ok and sub_bad:
            verdict.fail(where, "ok although a result inside failed")
        elif ok and not sub.results:
            # The writer counts what it writes, not what reached the
            # document (a result line redirected away): nothing passed.
            verdict.fail(where, "printed no result")
            sub_bad = True
        elif not ok and not sub_bad:
            verdict.fail(where, directive or "not ok with no failing result")
            sub_bad = True
        bad = bad or sub_bad
    return bad


def top_document(items):
    """Index of the first top-level (unindented) version line, or None."""
    for i, (ind, kind, _) in enumerate(items):
        if kind == "version" and ind == 0:
            return i
    return None


class Parser(argparse.ArgumentParser):
    """argparse, with a usage error told in one line on stderr (exit 2)."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: {message} (see --help)\n")
        sys.exit(2)


def main():
    summary, usage, rest = __doc__.split("\n\n", 2)
    ap = Parser(usage=usage.removeprefix("usage: "),
                description=f"{summary}\n\n{rest}",
                formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default="ktap",
                    help="the name on the last line and in every failure "
                    "line (default: ktap)")
    ap.add_argument("--expect", metavar="A,B,C",
                    help="the top-level results' names, comma-separated, "
                    "in order")
    ap.add_argument("file", metavar="FILE", nargs="?",
                    help="the KTAP document")
    args, extra = ap.parse_known_args()
    for arg in extra:
        if arg.startswith("-") and arg != "-":
            ap.error(f"unknown option '{arg}'")
    if extra:
        ap.error(f"unexpected argument '{extra[0]}'")
    if args.file is None:
        ap.error("no FILE given")
    verdict = Verdict(args.name)
    try:
        with open(args.file, encoding="utf-8", errors="replace") as f:
            items = list(classify(f))
    except OSError as e:
        verdict.fail(args.file, f"cannot read: {e.strerror}")
        items = []
    start = top_document(items) if items else None
    if start is None:
        if items or verdict.failed == 0:
            verdict.fail(args.file, "no KTAP document (no 'KTAP version 1')")
    else:
        doc, _ = parse_block(items, start, 0, None)
        judge(doc, verdict, args.name, top=True)
        if args.expect is not None:
            # (results missing from the end were counted against the plan)
            want = [n for n in args.expect.split(",") if n]
            got = [r[2] for r in doc.results]
            if doc.plan is not None and doc.plan != len(want):
                verdict.fail(args.name, f"plan 1..{doc.plan}, but {len(want)} "
                             "are expected")
            for i, (name, wanted) in enumerate(zip(got, want)):
                if name != wanted:
                    verdict.fail(args.name, f"result {i + 1} is '{name}', "
                                 f"want '{wanted}'")
            for name in got[len(want):]:
                verdict.fail(args.name, f"unexpected result '{name}'")
    print(f"{args.name}: {verdict.passed} passed, {verdict.failed} failed, "
          f"{verdict.skipped} skipped")
    return 1 if verdict.failed else 0


if __name__ == "__main__":
    sys.exit(main())
