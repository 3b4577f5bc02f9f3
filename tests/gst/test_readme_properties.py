#!/usr/bin/env python3
"""The element pages' property tables against the elements themselves.

Every element of the plugin has a page, docs/elements/ELEMENT.md (afxdpsrc
only where the build has it: without it, its page is skipped with a line
saying so).  Each `| property | default | meaning |` table of that page
must list exactly the properties ELEMENT itself installs (not its base
classes'), each with the default its GParamSpec has: the defaults are
written once, in the code, and this keeps the pages and gst-inspect-1.0
from drifting apart.  A default of `—` stands for none (NULL strings, the
read-only stats); `a…b` for a long string that starts with a and ends
with b.  Likewise each table whose header starts `| \`PROPERTY\` |` (the
modes table, `| \`mode\` | ...`) must list exactly the values (nicks) of
that enum property: in an element page, of that element's property; in
any other page directly under docs/ (docs/dpi.md's `dpi-select` table),
of the one element that has an enum property of that name.

usage: test_readme_properties.py DOCS_DIR
"""
import os
import re
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GObject, Gst  # noqa: E402

# Every element the plugin has; each must have a page.  Built only where its
# libraries are found: these are skipped, with a line, where the build lacks them.
ELEMENTS = ["pcapsrc", "afxdpsrc", "gpupacketproc", "packetresultenc", "ipfixsink",
            "pcapsink", "packettestsrc"]
OPTIONAL = {"afxdpsrc": "the build has no AF_XDP (libxdp, libbpf)"}
# Value tables that must be there (and are checked like any other).
REQUIRED_VALUE_TABLES = [("gpupacketproc", "mode"), ("gpupacketproc", "dpi-select")]


def property_tables(path):
    """{property: default} from a page's `| property | default | meaning |` tables."""
    lines = open(path, encoding="utf-8").read().splitlines()
    rows, found = {}, False
    for i, line in enumerate(lines):
        if line.strip() != "| property | default | meaning |":
            continue
        found = True
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            rows[cells[0].strip("`")] = cells[1].strip("`")
    return rows if found else None


def value_tables(path):
    """[(property, [values], line)] from tables headed `| `property` | ...`."""
    lines = open(path, encoding="utf-8").read().splitlines()
    tables = []
    for i, line in enumerate(lines):
        header = re.match(r"^\| `([a-z0-9-]+)` \|", line)
        if not header or i + 1 >= len(lines) or not lines[i + 1].startswith("|---"):
            continue
        values = []
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            cell = row.strip().strip("|").split("|")[0].strip()
            named = re.match(r"`([^`]+)`", cell)  # "`all` (default)": the value
            values.append(named.group(1) if named else cell)
        tables.append((header.group(1), values, i + 1))
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


def own_properties(instance):
    return {p.name: p for p in instance.list_properties()
            if p.owner_type == instance.__gtype__}


def enum_nicks(pspec):
    if pspec is None or GObject.type_fundamental(pspec.value_type) != GObject.TYPE_ENUM:
        return None
    return [v.value_nick for v in type(pspec.default_value).__enum_values__.values()]


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print(__doc__.strip().splitlines()[-1])
        return 2
    docs = sys.argv[1]
    pages_dir = os.path.join(docs, "elements")
    Gst.init(None)
    problems, checked, pages_checked = [], 0, 0

    registered = {f.get_name() for f in
                  Gst.Registry.get().get_feature_list_by_plugin("gpupacket")
                  if isinstance(f, Gst.ElementFactory)}
    pages = {name[:-3] for name in os.listdir(pages_dir) if name.endswith(".md")} \
        if os.path.isdir(pages_dir) else set()
    for element in sorted(set(ELEMENTS) | registered):
        if element not in pages:
            problems.append(f"{element}: no page {pages_dir}/{element}.md")
    for page in sorted(pages - set(ELEMENTS) - registered):
        problems.append(f"{pages_dir}/{page}.md: no element {page} in the plugin")

    instances = {}
    for element in ELEMENTS:
        instance = Gst.ElementFactory.make(element, None)
        if instance is None:
            if element in OPTIONAL:
                print(f"SKIP: {element}: not registered ({OPTIONAL[element]}); "
                      f"its page is not checked")
            else:
                problems.append(f"{element}: documented, but no such element is registered")
            continue
        instances[element] = instance

    for element, instance in sorted(instances.items()):
        path = os.path.join(pages_dir, element + ".md")
        if not os.path.exists(path):
            continue
        pages_checked += 1
        rows = property_tables(path)
        if rows is None:
            problems.append(f"{path}: no `| property | default | meaning |` table")
            continue
        own = own_properties(instance)
        for name in sorted(set(own) - set(rows)):
            problems.append(f"{element}: property {name} is missing from {path}'s table")
        for name in sorted(set(rows) - set(own)):
            problems.append(f"{element}: {path}'s table lists {name}, which the element lacks")
        for name in sorted(set(rows) & set(own)):
            actual = default_text(own[name])
            checked += 1
            if not agrees(rows[name], actual):
                problems.append(f"{element}: {name}: {path} says default {rows[name]!r}, "
                                f"the element {actual!r}")

    # Value tables: in an element page, of that element; in the other pages
    # directly under docs/, of the one element with an enum property so named.
    seen = set()
    other_pages = sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    element_pages = [os.path.join(pages_dir, e + ".md") for e in sorted(instances)]
    for path in element_pages + other_pages:
        if not os.path.exists(path):
            continue
        page_element = os.path.basename(path)[:-3] if path in element_pages else None
        for prop, values, line in value_tables(path):
            if page_element:
                owners = [page_element]
            else:
                owners = [e for e, inst in sorted(instances.items())
                          if enum_nicks(inst.find_property(prop)) is not None]
                if len(owners) != 1:
                    problems.append(f"{path}:{line}: a table of {prop} values, but "
                                    f"{len(owners)} elements have such an enum property "
                                    f"({', '.join(owners) or 'none'})")
                    continue
            element = owners[0]
            nicks = enum_nicks(instances[element].find_property(prop))
            if nicks is None:
                problems.append(f"{path}:{line}: a table of {prop} values, not an enum "
                                f"property of {element}")
                continue
            if values != nicks:
                problems.append(f"{path}:{line}: {element}'s {prop} table lists {values}, "
                                f"the element has {nicks}")
            seen.add((element, prop))
            checked += 1
    for element, prop in REQUIRED_VALUE_TABLES:
        if element in instances and (element, prop) not in seen:
            problems.append(f"no table of {element}'s {prop} values under {docs}")

    for p in problems:
        print("FAIL:", p)
    print(f"{checked} documented defaults and value tables checked in {pages_checked} "
          f"element pages: " + ("FAILED" if problems else "PASS"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
