#!/usr/bin/env python3
"""Reads Swift Testing's xUnit report and prints what failed.

  failed-tests.py REPORT.xml --summary   one block per failed test: id and message
  failed-tests.py REPORT.xml --filter    a `swift test --filter` regex matching just those tests
Prints nothing (exit 0) when nothing failed; exit 2 when the report is missing or unreadable.
"""
import re
import sys
import xml.etree.ElementTree as ET


def failures(path):
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        failed = case.findall("failure") + case.findall("error")
        if failed:
            messages = [(f.get("message") or f.text or "").strip() for f in failed]
            yield case.get("classname", ""), case.get("name", ""), messages


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("--summary", "--filter"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        found = list(failures(sys.argv[1]))
    except (OSError, ET.ParseError) as error:
        print(f"failed-tests: cannot read {sys.argv[1]}: {error}", file=sys.stderr)
        return 2
    if sys.argv[2] == "--summary":
        for classname, name, messages in found:
            print(f"✘ {classname}/{name}")
            for message in messages:
                print("    " + message.replace("\n", "\n    "))
    elif found:
        # Parameterised tests repeat one function; a name like f(x:) is escaped for the regex.
        # The test id is Module.Outer/Inner/function(labels:), xUnit's classname Module.Outer.Inner.
        def test_id(classname, name):
            module, _, suites = classname.partition(".")
            if not suites:
                return f"{module}/{name}"
            return "/".join([f"{module}.{suites.split('.')[0]}"] + suites.split(".")[1:] + [name])
        names = sorted({re.escape(test_id(c, n)) for c, n, _ in found})
        print("|".join(names))
    return 0


sys.exit(main())
