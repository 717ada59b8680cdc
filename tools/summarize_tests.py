"""Counts test cases in the test.xml Bazel leaves for each test target, and
in further JUnit XML files (pytest's --junitxml).

Prints "N passed, N failed" as the last line. A test binary that crashed before
writing its own XML still has Bazel's one-case XML, counted as one failure; a
JUnit file named but missing (pytest crashed) counts as one failure too. A
failed build counts as one failure so that it can never read as success.
Skipped cases are not counted.
"""

import os
import sys
import xml.etree.ElementTree as ET


def count(path, failed_names=None):
    """(passed, failed) cases in one XML file; appends the names of failed
    cases to `failed_names` if given."""
    passed = failed = 0
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return 0, 1
    for case in root.iter("testcase"):
        if case.get("status") == "notrun" or case.find("skipped") is not None:
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            if failed_names is not None:
                failed_names.append("%s::%s" % (case.get("classname"),
                                                case.get("name")))
        else:
            passed += 1
    return passed, failed


def main():
    """argv: testlogs dir, build exit code, then JUnit XML files; stdin: the
    Bazel test labels to count."""
    testlogs = sys.argv[1] if len(sys.argv) > 1 else "bazel-testlogs"
    build_rc = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    passed = failed = 0
    for label in sys.stdin.read().split():
        # //pkg/sub:name -> <testlogs>/pkg/sub/name/test.xml
        package, _, name = label.lstrip("/").partition(":")
        xml = os.path.join(testlogs, package, name, "test.xml")
        if not os.path.exists(xml):
            if build_rc == 0:
                failed += 1
                print("FAILED (no result): %s" % label)
            continue
        p, f = count(xml)
        passed += p
        failed += f
        if f:
            print("FAILED: %s" % label)
    for junit in sys.argv[3:]:
        if not os.path.exists(junit):
            failed += 1
            print("FAILED (no result): %s" % junit)
            continue
        names = []
        p, f = count(junit, names)
        passed += p
        failed += f
        for name in names:
            print("FAILED: %s" % name)
    if build_rc != 0:
        failed += 1
        print("FAILED: the build")
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
