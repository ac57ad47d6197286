#!/usr/bin/env python3
"""The module graph, read from the objects' symbols (nm), held to the
allowed list in modules.txt beside this file (docs/architecture.md draws
it).

Every object of the library belongs to the module of its folder
(libkernlab/<module>/x.c); the programs' objects to their program (cli,
kl-worker, inject). An object that uses a symbol another module's object
defines is an edge between the modules; an edge modules.txt does not list
fails the test, and so does:
  - a line of modules.txt naming a module listed below it (the allowed
    graph itself must point down)
  - a cycle between the files of one module (a.c uses b.c, b.c uses a.c)
  - a symbol modules.txt keeps to one module ("only records: ...") used
    from another
  - a program listed as "public" using anything of the library's but its
    public API (kl_ names, never kl__)
Before the real check the checker is run on a planted graph with an edge
pointing up, a file cycle, a ledger opened outside records and a rules
line pointing up, and must report all four: a check that cannot fail is
not a check.

usage: check_deps.py MODULES_TXT NAME=OBJ;OBJ;...   (a program's objects
under its name; '*' for the library's, each in the module of its folder)
"""
import collections
import os
import subprocess
import sys


def read_rules(path):
    allowed, only, public, order = {}, {}, set(), []
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            head, _, rest = line.partition(":")
            words = rest.split()
            if head.startswith("only "):
                for sym in words:
                    only[sym] = head[5:].strip()
            elif words == ["public"]:
                public.add(head.strip())
                allowed.setdefault(head.strip(), set())
                order.append(head.strip())
            else:
                allowed[head.strip()] = set(words)
                order.append(head.strip())
    return allowed, only, public, order


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRCVW":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] in ("U", "w"):
            used.add(parts[1])
    return defined, used


def objects(specs):
    """[(module, file, defined, used)] for the objects named: NAME=OBJ;OBJ..
    (CMake's $<TARGET_OBJECTS:...>); NAME '*' takes each object's module
    from its path (.../libkernlab/<module>/<file>.c.o)."""
    out = []
    for spec in specs:
        name, _, rest = spec.partition("=")
        for path in [p for p in rest.split(";") if p.endswith(".o")]:
            parts = path.replace(os.sep, "/").split("/")
            if name == "*":
                if "libkernlab" not in parts:
                    continue
                i = len(parts) - 1 - parts[::-1].index("libkernlab")
                mod, f = parts[i + 1], "/".join(parts[i + 1:])
            else:
                mod, f = name, name + "/" + parts[-1]
            f = f[:-2] if f.endswith(".c.o") else f
            f = f[:-2] if f.endswith(".o") else f
            out.append((mod, f) + symbols(path))
    return out


def sccs(nodes, edges):
    """Tarjan's strongly connected components with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def check(objs, allowed, only, public):
    """The problems (strings) of a set of objects under the rules."""
    problems = []
    owner = {}
    for mod, f, defined, _ in objs:
        for s in defined:
            owner.setdefault(s, (mod, f))
    edges = collections.defaultdict(set)   # module -> module: example
    why = {}
    files = collections.defaultdict(set)
    for mod, f, _, used in objs:
        for s in used:
            if s not in owner:
                continue
            m2, f2 = owner[s]
            if m2 == mod:
                if f2 != f:
                    files[(mod, f)].add((mod, f2))
                continue
            edges[mod].add(m2)
            why.setdefault((mod, m2), "%s uses %s (%s)" % (f, s, f2))
            if s in only and only[s] != mod:
                problems.append("%s uses %s, which only %s may use"
                                % (f, s, only[s]))
            if mod in public and s.startswith("kl__"):
                problems.append("%s (a program of the public API only) uses "
                                "the internal %s (%s)" % (f, s, f2))
    for mod in sorted(edges):
        for m2 in sorted(edges[mod]):
            if mod not in allowed:
                problems.append("module %s is not in modules.txt (it uses %s: "
                                "%s)" % (mod, m2, why[(mod, m2)]))
            elif m2 not in allowed[mod] and mod not in public:
                problems.append("edge %s -> %s is not allowed: %s"
                                % (mod, m2, why[(mod, m2)]))
    nodes = sorted({(m, f) for m, f, _, _ in objs})
    for comp in sccs(nodes, files):
        problems.append("files of %s use each other in a cycle: %s"
                        % (comp[0][0], " <-> ".join(f for _, f in comp)))
    return problems, edges


def order_problems(allowed, order, public):
    """modules.txt's own shape: each module may use only modules listed
    above it (so the graph it allows has no cycle and points down)."""
    problems = []
    where = {m: i for i, m in enumerate(order)}
    for i, mod in enumerate(order):
        if mod in public:
            continue
        for dep in sorted(allowed.get(mod, ())):
            if dep not in where:
                problems.append("modules.txt: %s may use %s, which it does "
                                "not list" % (mod, dep))
            elif where[dep] >= i:
                problems.append("modules.txt: %s may use %s, which is listed "
                                "below it (the list must point down)"
                                % (mod, dep))
    return problems


def self_test():
    """A graph with an upward edge, a file cycle and a ledger opened
    outside records, and a rules list with a line pointing up: all four
    must be found."""
    allowed = {"core": set(), "records": {"core"}, "run": {"core", "records"}}
    only = {"kl__ledger_append": "records"}
    objs = [
        ("core", "core/a", {"kl__a"}, {"kl__run_thing"}),     # core -> run
        ("core", "core/b", {"kl__b"}, {"kl__c"}),
        ("core", "core/c", {"kl__c"}, {"kl__b"}),             # b <-> c
        ("records", "records/io", {"kl__ledger_append"}, {"kl__a"}),
        ("run", "run/run", {"kl__run_thing"}, {"kl__ledger_append"}),
    ]
    problems, _ = check(objs, allowed, only, set())
    # and a modules.txt whose line points up
    problems += order_problems({"core": {"run"}, "run": {"core"}},
                               ["core", "run"], set())
    want = ["edge core -> run", "core/b <-> core/c", "only records may use",
            "core may use run, which is listed below it"]
    missing = [w for w in want if not any(w in p for p in problems)]
    if missing:
        print("self-test: the checker missed %s in %s" % (missing, problems))
        return False
    print("self-test: a planted upward edge, a file cycle, a ledger "
          "opened outside records and an upward modules.txt line are all "
          "reported")
    return True


def main():
    if len(sys.argv) < 3 or not os.path.isfile(sys.argv[1]):
        print("usage:" + __doc__.split("usage:")[1].rstrip(),
              file=sys.stderr)
        return 2
    if not self_test():
        return 1
    allowed, only, public, order = read_rules(sys.argv[1])
    objs = objects(sys.argv[2:])
    if not objs:
        print("no objects found under %s" % sys.argv[2:])
        return 1
    problems, edges = check(objs, allowed, only, public)
    problems = order_problems(allowed, order, public) + problems
    mods = sorted({m for m, _, _, _ in objs})
    print("%d objects in %d modules: %s" % (len(objs), len(mods),
                                           " ".join(mods)))
    for mod in [m for m in order if m in edges]:
        print("  %-10s -> %s" % (mod, " ".join(sorted(edges[mod]))))
    for p in problems:
        print("FAIL:", p)
    if problems:
        print("%d problem(s): fix the code, or, if the edge is right, add "
              "it to %s and to docs/architecture.md" % (len(problems),
                                                        sys.argv[1]))
        return 1
    print("ok: every edge is allowed, no file cycles")
    return 0


if __name__ == "__main__":
    sys.exit(main())
