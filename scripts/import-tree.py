#!/usr/bin/env python3
"""Checks that every crate's files form a tree of imports.

An edge A -> B is a path in A's code (`use` or an inline `crate::`, `super::`, `self::` path,
test modules included) that names an item defined in B; `pub use` re-exports are followed to
the file that defines the item and are not edges themselves. At every level of the module
tree, the modules below one parent (a file, or a folder with all it holds) must not import
each other in a circle; a parent's own file may use what its submodules define (it declares
them). Prints each crate's file and edge counts and every circle with the edges that make it;
exits 1 when there is one. `-v` also lists every edge.

The layer rule: every crate sits in one layer of LAYERS and depends (Cargo.toml's dependencies,
dev- and build-dependencies) only on crates of lower layers; within a crate, its core (every
module but those BACKENDS names) imports no backend module. A crate missing from LAYERS, a
dependency on a crate of its own or a higher layer, or a core file importing a backend is
printed with the line at fault and exits 1. `--self-test` checks the rule itself on a copy of
the repository: it passes as it is, and fails on a planted back-import, a planted upward
dependency and a planted dependency of the exporter on what it serves.

usage: scripts/import-tree.py [REPO] [-v] [--self-test]
"""
import os, re, shutil, subprocess, sys, tempfile

# The layers, lowest first (docs/architecture.md draws them): a crate uses only crates below it.
LAYERS = [
    ('ground', ['pcie-model', 'pcie-report', 'pcie-output']),
    ('sysfs reader', ['pcie-sysfs']),
    ('GPU reader (reads the sysfs device record too)', ['pcie-nvml']),
    ('simulation, health', ['pcie-sim', 'pcie-health']),
    ('methodology', ['pcie-bench']),
    # pcie-exporter serves pages it is handed: it depends on none of the crates whose data it
    # serves (pcie-pmu, pcie-health), which sharing their layer enforces.
    ('backends, fit, PMU, exporter', ['pcie-gpu', 'pcie-fit', 'pcie-pmu', 'pcie-exporter']),
    ('command line', ['pcieperf', 'pcie-fuzz']),
]
# Modules of a crate that are backends above its core (files below src/, without `.rs`).
BACKENDS = {'pcie-bench': ['sim_backend', 'exec']}

def strip_comments(src):
    src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    src = re.sub(r'//[^\n]*', '', src)
    src = re.sub(r'"(?:\\.|[^"\\])*"', '""', src)
    return src

def modpath_of(rel):  # rel: path under src, e.g. results/reader.rs -> ['results','reader']
    parts = rel[:-3].split('/')
    if parts[-1] in ('mod', 'lib', 'main'):
        parts = parts[:-1]
    return parts

def expand_use(body):
    """'a::{b, c::{d, e}}' -> ['a::b', 'a::c::d', 'a::c::e']"""
    body = body.strip()
    m = re.match(r'^(.*?)\{(.*)\}$', body, re.S)
    if not m:
        return [body]
    prefix, inner = m.group(1), m.group(2)
    items, depth, cur = [], 0, ''
    for ch in inner:
        if ch == '{': depth += 1
        if ch == '}': depth -= 1
        if ch == ',' and depth == 0:
            items.append(cur); cur = ''
        else:
            cur += ch
    items.append(cur)
    out = []
    for it in items:
        it = it.strip()
        if it:
            out += [prefix + e for e in expand_use(it)]
    return out

BYMOD = {}
def inline_mods(src):
    """(start, end, name) of every inline `mod name { ... }` block."""
    spans = []
    for m in re.finditer(r'\bmod\s+(\w+)\s*\{', src):
        depth, i = 0, m.end() - 1
        while i < len(src):
            if src[i] == '{': depth += 1
            elif src[i] == '}':
                depth -= 1
                if depth == 0: break
            i += 1
        spans.append((m.start(), i, m.group(1)))
    return spans

def module_at(mp, spans, pos):
    extra = [n for (a, b, n) in spans if a <= pos <= b]
    return list(mp) + extra

def analyse(src_dir):
    files = {}
    for root, _, names in os.walk(src_dir):
        for n in names:
            if n.endswith('.rs'):
                p = os.path.join(root, n)
                rel = os.path.relpath(p, src_dir)
                files[rel] = strip_comments(open(p).read())
    bymod = {}
    for rel in files:
        mp = tuple(modpath_of(rel))
        if rel.startswith('bin/') or rel == 'main.rs' and 'lib.rs' in files:
            continue
        bymod[mp] = rel
    global BYMOD
    BYMOD = bymod
    # re-exports per module: name -> absolute path list
    reexp = {}
    for rel, src in files.items():
        mp = modpath_of(rel)
        for m in re.finditer(r'\bpub(?:\([^)]*\))?\s+use\s+([^;]+);', src):
            for u in expand_use(m.group(1)):
                u = re.sub(r'\s+', '', u.split(' as ')[0])
                segs = absolutise(u.split('::'), mp)
                if segs is None: continue
                name = segs[-1]
                reexp.setdefault(tuple(mp), {})[name] = segs
    def resolve(segs, depth=0):
        """absolute segs (without 'crate') -> file rel"""
        if depth > 20: return None
        # longest module prefix that is a file
        for k in range(len(segs), -1, -1):
            if tuple(segs[:k]) in bymod:
                mod = tuple(segs[:k])
                rest = segs[k:]
                if rest and rest[0] in reexp.get(mod, {}) and rest[0] != '*':
                    tgt = reexp[mod][rest[0]]
                    if tgt[-1] == '*':
                        return bymod[mod]
                    if tgt[0] == '<ext>':
                        return bymod[mod]
                    r = resolve(tgt + rest[1:], depth + 1)
                    return r or bymod[mod]
                return bymod[mod]
        return None
    edges = {}
    for rel, src in files.items():
        mp0 = modpath_of(rel)
        spans = inline_mods(src)
        # re-exports are the module's shape, not a dependency: resolved through, never edges
        body = re.sub(r'\bpub(?:\([^)]*\))?\s+use\s+[^;]+;', lambda m: ' ' * len(m.group(0)), src)
        paths = []
        for m in re.finditer(r'\buse\s+([^;]+);', body):
            paths += [(re.sub(r'\s+', '', u.split(' as ')[0]), m.start()) for u in expand_use(m.group(1))]
        for m in re.finditer(r'(?<![\w:])((?:crate|super|self)(?:::(?:super|\w+))+)', body):
            if body[max(0, m.start() - 4):m.start()].strip().endswith('use'): continue
            paths.append((m.group(1), m.start()))
        for p, pos in paths:
            mp = module_at(mp0, spans, pos)
            segs = absolutise(p.split('::'), mp)
            if not segs or segs[0] == '<ext>': continue
            if segs[-1] in ('*', 'self'): segs = segs[:-1]
            t = resolve(segs)
            if t and t != rel:
                edges.setdefault(rel, set()).add(t)
    return files, edges

def absolutise(segs, mp):
    segs = [s for s in segs if s]
    if not segs: return None
    if segs[0] == 'crate':
        return segs[1:]
    if segs[0] in ('super', 'self'):
        base = list(mp)
        while segs and segs[0] in ('super', 'self'):
            if segs[0] == 'super': base = base[:-1]
            segs = segs[1:]
        return base + segs
    # a path starting with a child module's name (2018 paths) is relative to this module
    if tuple(list(mp) + segs[:1]) in BYMOD:
        return list(mp) + segs
    return ['<ext>'] + segs

def cycles(nodes, edges):
    idx, low, st, on, out, c = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)
    def strong(v):
        idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
        for w in edges.get(v, ()):
            if w not in idx:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: out.append(sorted(comp))
    for v in nodes:
        if v not in idx: strong(v)
    return out

def level_cycles(files, edges):
    """At every level of the module tree, the modules below one parent (a file, or a folder
    with everything in it) and the parent's own file: cycles among them. The parent's file
    using its own submodules is the module's shape (it declares them) and is left out."""
    found = []
    dirs = {''} | {os.path.dirname(f) for f in files}
    for d in list(dirs):
        while d:
            d = os.path.dirname(d); dirs.add(d)
    for d in sorted(dirs):
        pre = d + '/' if d else ''
        root = pre + ('lib.rs' if not d else 'mod.rs')
        def node(f):
            if not f.startswith(pre): return None
            rest = f[len(pre):]
            if f == root or (not d and rest in ('main.rs',)): return '(' + root + ')'
            head = rest.split('/')[0]
            return head if rest == head else head + '/'
        e = {}
        for a, bs in edges.items():
            na = node(a)
            if na is None: continue
            for b in bs:
                nb = node(b)
                if nb is None or nb == na or na.startswith('('): continue
                e.setdefault(na, set()).add((nb, a, b))
        simple = {k: {x[0] for x in v} for k, v in e.items()}
        for comp in cycles(set(simple) | {x for v in simple.values() for x in v}, simple):
            found.append((d or '(crate)', comp, [(a, b) for k in comp for (n, a, b) in sorted(e.get(k, ())) if n in comp]))
    return found

def layer_of(crate):
    for i, (_, crates) in enumerate(LAYERS):
        if crate in crates:
            return i
    return None

def cargo_deps(manifest):
    """(section, dependency name) of every pcie crate a Cargo.toml's dependency tables name."""
    out, section = [], None
    for line in open(manifest):
        h = re.match(r'^\s*\[([^\]]+)\]', line)
        if h:
            section = h.group(1).strip()
            continue
        if section and re.search(r'(^|\.)(dev-|build-)?dependencies$', section):
            m = re.match(r'^\s*(pcie[\w-]*)\s*[.=]', line)
            if m:
                out.append((section, m.group(1)))
    return out

def layer_faults(root, crate, files, edges):
    """What breaks the layer rule in one crate, as printable lines."""
    faults = []
    mine = layer_of(crate)
    if mine is None:
        return [f'{crate} is in no layer of scripts/import-tree.py\'s LAYERS']
    manifest = os.path.join(root, 'crates', crate, 'Cargo.toml')
    for section, dep in cargo_deps(manifest) if os.path.isfile(manifest) else []:
        if dep == crate and 'dev-' in section:
            continue  # its own features, for its tests
        theirs = layer_of(dep)
        if theirs is None or theirs >= mine:
            where = 'no layer' if theirs is None else f'layer "{LAYERS[theirs][0]}"'
            faults.append(f'{crate} (layer "{LAYERS[mine][0]}") depends on {dep} ({where}) in [{section}]')
    backends = BACKENDS.get(crate, [])
    def is_backend(rel):
        return modpath_of(rel)[:1] and modpath_of(rel)[0] in backends
    for a in sorted(edges):
        if is_backend(a) or a == 'lib.rs':
            continue
        for b in sorted(edges[a]):
            if is_backend(b):
                faults.append(f'{crate}: the core imports a backend: {a} -> {b}')
    return faults

def self_test():
    """The rule passes on the repository and fails on a planted back-import and upward
    dependency, each named."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    script = os.path.abspath(__file__)
    def run(tree):
        p = subprocess.run([sys.executable, script, tree], capture_output=True, text=True)
        return p.returncode, p.stdout
    with tempfile.TemporaryDirectory() as tmp:
        for crate in os.listdir(os.path.join(here, 'crates')):
            src = os.path.join(here, 'crates', crate)
            if os.path.isdir(os.path.join(src, 'src')):
                shutil.copytree(os.path.join(src, 'src'), os.path.join(tmp, 'crates', crate, 'src'))
                shutil.copy(os.path.join(src, 'Cargo.toml'), os.path.join(tmp, 'crates', crate))
        rc, out = run(tmp)
        assert rc == 0, 'the repository breaks the rule:\n' + out
        stats = os.path.join(tmp, 'crates/pcie-bench/src/stats.rs')
        clean = open(stats).read()
        open(stats, 'w').write('use crate::exec::ExecBackend;\n' + clean)
        rc, out = run(tmp)
        assert rc == 1 and 'the core imports a backend: stats.rs -> exec/mod.rs' in out, out
        open(stats, 'w').write('fn f() { let _ = crate::sim_backend::SimBackend::from_spec("sim"); }\n' + clean)
        rc, out = run(tmp)
        assert rc == 1 and 'stats.rs -> sim_backend.rs' in out, out
        open(stats, 'w').write(clean)
        layer = 'backends, fit, PMU, exporter'
        for crate, dep, fault in [
            # upward
            ('pcie-bench', 'pcie-gpu', f'pcie-bench (layer "methodology") depends on pcie-gpu (layer "{layer}")'),
            # the exporter on what it serves
            ('pcie-exporter', 'pcie-pmu', f'pcie-exporter (layer "{layer}") depends on pcie-pmu (layer "{layer}")'),
        ]:
            manifest = os.path.join(tmp, 'crates', crate, 'Cargo.toml')
            text = open(manifest).read()
            open(manifest, 'w').write(text.replace('[dependencies]\n', f'[dependencies]\n{dep}.workspace = true\n', 1))
            rc, out = run(tmp)
            assert rc == 1 and fault in out, out
            open(manifest, 'w').write(text)
        assert run(tmp)[0] == 0
    print('import-tree self-test: passes on the repository, fails on a planted back-import, upward dependency and exporter -> pcie-pmu dependency')

if '--self-test' in sys.argv:
    self_test()
    sys.exit(0)
args = [a for a in sys.argv[1:] if a != '-v']
root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
verbose = '-v' in sys.argv
bad = 0
for crate in sorted(os.listdir(os.path.join(root, 'crates'))):
    src = os.path.join(root, 'crates', crate, 'src')
    if not os.path.isdir(src): continue
    files, edges = analyse(src)
    for fault in layer_faults(root, crate, files, edges):
        bad += 1
        print(f'  layer rule: {fault}')
    n = sum(len(v) for v in edges.values())
    cs = level_cycles(files, edges)
    print(f'{crate}: {len(files)} files, {n} import edges between files, {len(cs)} circles')
    for d, comp, why in cs:
        bad += 1
        print(f'  circle in {d}: ' + ' <-> '.join(comp))
        for a, b in why:
            print(f'    {a} -> {b}')
    if verbose:
        for a in sorted(edges):
            print('   ', a, '->', ', '.join(sorted(edges[a])))
sys.exit(1 if bad else 0)
