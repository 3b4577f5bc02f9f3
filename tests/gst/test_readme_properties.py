#!/usr/bin/env python3
"""README's property tables against the elements themselves.

Each `| property | default | meaning |` table under a `### ELEMENT` heading
must list exactly the properties ELEMENT itself installs (not its base
classes'), each with the default its GParamSpec has: the defaults are
written once, in the code, and this keeps README and gst-inspect-1.0 from
drifting apart.  A default of `—` stands for none (NULL strings, the
read-only stats); `a…b` for a long string that starts with a and ends
with b.  Likewise each table whose header starts `| \`PROPERTY\` |` (the
modes table, `| \`mode\` | ...`) must list exactly the values (nicks) of
that enum property of the element whose section holds it.

usage: test_readme_properties.py README.md
"""
import re
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GObject, Gst  # noqa: E402


def readme_tables(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    tables, element = {}, None
    for i, line in enumerate(lines):
        heading = re.match(r"^(#{2,3}) (.*?)\s*$", line)
        if heading:  # deeper headings stay within the element's section
            element = heading.group(2) if heading.group(1) == "###" else None
            continue
        if line.strip() != "| property | default | meaning |" or not element:
            continue
        rows = tables.setdefault(element, {})
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            rows[cells[0].strip("`")] = cells[1].strip("`")
    return tables


def readme_value_tables(path):
    """{(element, property): [values]} from tables headed `| `property` | ...`."""
    lines = open(path, encoding="utf-8").read().splitlines()
    tables, element = {}, None
    for i, line in enumerate(lines):
        heading = re.match(r"^(#{2,3}) (.*?)\s*$", line)
        if heading:
            element = heading.group(2) if heading.group(1) == "###" else None
            continue
        header = re.match(r"^\| `([a-z0-9-]+)` \|", line)
        if not header or not element or i + 1 >= len(lines) or not lines[i + 1].startswith("|---"):
            continue
        values = tables.setdefault((element, header.group(1)), [])
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            cell = row.strip().strip("|").split("|")[0].strip()
            named = re.match(r"`([^`]+)`", cell)  # "`all` (default)": the value
            values.append(named.group(1) if named else cell)
    return tables


def default_text(pspec):
    value = pspec.default_value
    kind = GObject.type_fundamental(pspec.value_type)
    if kind == GObject.TYPE_BOOLEAN:
        return "true" if value else "false"
    if kind == GObject.TYPE_ENUM:
        return value.value_nick
    if value is None:  # strings without a default, boxed values
        return "—"
    if kind in (GObject.TYPE_FLOAT, GObject.TYPE_DOUBLE):
        return f"{value:g}"
    return str(value)


def agrees(documented, actual):
    if "…" in documented:
        head, tail = documented.split("…", 1)
        return actual.startswith(head) and actual.endswith(tail)
    return documented == actual


def main():
    Gst.init(None)
    tables = readme_tables(sys.argv[1])
    problems, checked = [], 0
    for element, rows in sorted(tables.items()):
        instance = Gst.ElementFactory.make(element, None)
        if instance is None:
            problems.append(f"{element}: README documents it, but no such element is registered")
            continue
        own = {p.name: p for p in instance.list_properties()
               if p.owner_type == instance.__gtype__}
        for name in sorted(set(own) - set(rows)):
            problems.append(f"{element}: property {name} is missing from README's table")
        for name in sorted(set(rows) - set(own)):
            problems.append(f"{element}: README's table lists {name}, which the element lacks")
        for name in sorted(set(rows) & set(own)):
            actual = default_text(own[name])
            checked += 1
            if not agrees(rows[name], actual):
                problems.append(f"{element}: {name}: README says default {rows[name]!r}, "
                                f"the element {actual!r}")
    if not tables:
        problems.append("no property tables found in README")
    value_tables = readme_value_tables(sys.argv[1])
    for (element, prop), values in sorted(value_tables.items()):
        instance = Gst.ElementFactory.make(element, None)
        pspec = instance.find_property(prop) if instance else None
        if pspec is None or GObject.type_fundamental(pspec.value_type) != GObject.TYPE_ENUM:
            problems.append(f"{element}: README has a table of {prop} values, not an enum property")
            continue
        nicks = [v.value_nick for v in type(pspec.default_value).__enum_values__.values()]
        if values != nicks:
            problems.append(f"{element}: README's {prop} table lists {values}, the element has {nicks}")
        checked += 1
    if ("gpupacketproc", "mode") not in value_tables:
        problems.append("README has no table of gpupacketproc's modes")
    for p in problems:
        print("FAIL:", p)
    print(f"{checked} documented defaults checked in {len(tables)} elements: "
          + ("FAILED" if problems else "PASS"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
