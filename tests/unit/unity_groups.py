#!/usr/bin/env python3
"""Writes tests/unit/unity_groups.cmake: the unit-test files compiled together
in unity batches when IODIAG_UNITY=ON (the test command's sanitizer build,
where the unit tests were ~40 % of the compile time, one translation unit each).

A unity batch is one translation unit, so files whose file-local names
(anonymous namespace, static, #define) are the same cannot share one. This
reads those names from each file and fills groups of at most GROUP_SIZE
files whose names do not meet. What it cannot see (a global
`using namespace` that makes another file's name ambiguous) is in ALONE,
found by compiling. A file in no group is compiled on its own, as before:
a new test file needs nothing here. After adding a file-local name to a
grouped file, run this again (or move the file to ALONE) if the unity
build reports a redefinition or an ambiguity.

    tests/unit/unity_groups.py        (from the repository's root)
"""
import glob
import re

GROUP_SIZE = 12
# Their global using-directives (iodiag::testing's kP, gtest's testing)
# collide with other files' names in a batch.
ALONE = {"judgement_test.cpp", "watch_sampler_store_test.cpp"}
# Test definitions: gtest makes their names unique already.
GTEST_MACROS = {"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "INSTANTIATE_TEST_SUITE_P"}


def file_local_names(path):
    """Names declared at the top of the file's anonymous namespaces, static
    ones at file scope, and macros (a rough reading: braces counted per line,
    strings and comments not parsed)."""
    names, depth, anon_depth = set(), 0, None
    for line in open(path):
        line = line.rstrip("\n")
        code = re.sub(r'"([^"\\]|\\.)*"|//.*', "", line)
        m = re.match(r"\s*#define\s+(\w+)", line)
        if m:
            names.add("#" + m.group(1))
        top = depth == (anon_depth + 1 if anon_depth is not None else 0)
        if re.match(r"^\s*namespace\s*\{", code) and anon_depth is None:
            anon_depth = depth
        elif top and not line.startswith((" ", "\t", "}", "#")) and code.strip():
            m = (re.match(r"^(?:template\s*<[^>]*>\s*)?(?:class|struct|enum(?:\s+class)?|union)\s+(\w+)", code)
                 or re.match(r"^using\s+(\w+)\s*=", code)
                 or re.match(r"^[^(=;{]*?(\w+)\s*[(=\[{;]", code))
            if m and m.group(1) not in GTEST_MACROS and (anon_depth is not None or code.startswith("static ")):
                names.add(m.group(1))
        depth += code.count("{") - code.count("}")
        if anon_depth is not None and depth <= anon_depth:
            anon_depth = None
    return names


def main():
    groups = []
    for path in sorted(glob.glob("tests/unit/*.cpp")):
        if path.split("/")[-1] in ALONE:
            continue
        names = file_local_names(path)
        for g in groups:
            if len(g["files"]) < GROUP_SIZE and not g["names"] & names:
                g["files"].append(path)
                g["names"] |= names
                break
        else:
            groups.append({"files": [path], "names": set(names)})
    out = ["# Written by tests/unit/unity_groups.py (see there): unit-test files compiled",
           "# together when IODIAG_UNITY=ON; a file in no group is compiled on its own."]
    for i, g in enumerate(x for x in groups if len(x["files"]) > 1):
        out.append("set_source_files_properties(")
        out += ["  ${PROJECT_SOURCE_DIR}/" + f for f in g["files"]]
        out.append(f"  TARGET_DIRECTORY iodiag_unit_tests PROPERTIES UNITY_GROUP unit_tests_{i})")
    with open("tests/unit/unity_groups.cmake", "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
