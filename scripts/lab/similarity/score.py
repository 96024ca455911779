#!/usr/bin/env python3
"""score.py LABELS.json NEIGHBOURS.json [--json] [--by-label] [-k 5] -- score any system's neighbour lists.

NEIGHBOURS.json = {"<query path>": ["<neighbour path>", ...]}, each list ranked most similar first.
Paths may be relative to LABELS.json's folder (library/styles/seed1/x.wav), to its library/ folder
(styles/seed1/x.wav) or absolute under either.

Leave-one-out: a query must not be in its own list. If it is, that slot counts as a miss and as an
error (errors.self_in_list); so does a neighbour listed twice (errors.repeated) or one that is not in
LABELS.json (errors.unknown_neighbour). A labelled track with no list at all is scored as a query
whose every slot is a miss (missing_queries); a list for a path not in LABELS.json is ignored
(errors.unknown_query).

Per query: a neighbour is a hit when it has the query's label AND the query's group (a neighbour
from the other group is always wrong).
  p@k    hits among the first k slots / k (slots past the end of a short list are misses)
  1-NN   the first slot is a hit
Only queries whose label has another track in its group are scored (a package with one song cannot
be found again); the others stay in the library as distractors (n_singletons). `ceiling` is the best
mean p@k this set allows: mean over scored queries of min(k, tracks with the label - 1) / k; `chance`
is the expected p@k (and 1-NN) of a random ranking: (tracks with the label - 1) / (tracks - 1);
`in-group` is the share of the first k slots taken by tracks of the query's group.
Groups: styles, packages, and packages_excl_same_stem: the packages queries again with every
neighbour that shares the query's file stem (the same rendered song in another encoding, e.g.
x.wav / x.mp3) struck from the list before ranking, so duplicates of a song never count as a hit
(a query's own path still counts as an error). overall = styles and packages queries together
(mean over queries, not over groups).
"""
import argparse
import collections
import json
import os
import sys

GROUPS = ('styles', 'packages')


def stem(p):
    return os.path.splitext(os.path.basename(p))[0]


class Resolver:
    def __init__(self, labels_path, tracks):
        self.root = os.path.dirname(os.path.abspath(labels_path))
        self.tracks = tracks

    def __call__(self, p):
        if not isinstance(p, str):
            return None
        q = p
        if os.path.isabs(q):
            q = os.path.relpath(os.path.normpath(q), self.root)
        q = os.path.normpath(q).replace(os.sep, '/')
        for cand in (q, 'library/' + q):
            if cand in self.tracks:
                return cand
        return None


def score(tracks, lists, k, group, excl_stem=False):
    """lists: resolved {query: [neighbour or None (unknown), ...]}. Returns (summary, per_label)."""
    by_label = collections.Counter((t['group'], t['label']) for t in tracks.values())
    stems_by_label = collections.defaultdict(set)
    for p, t in tracks.items():
        stems_by_label[(t['group'], t['label'])].add(stem(p))
    n_all = len(tracks)
    n = 0
    p_sum = nn_sum = ceil_sum = chance_sum = group_sum = 0.0
    singletons = missing = 0
    per_label = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for q, t in sorted(tracks.items()):
        if t['group'] != group:
            continue
        key = (t['group'], t['label'])
        if excl_stem:
            others = sum(1 for p, u in tracks.items()
                         if (u['group'], u['label']) == key and stem(p) != stem(q))
        else:
            others = by_label[key] - 1
        if others < 1:
            singletons += 1
            continue
        lst = lists.get(q)
        if lst is None:
            missing += 1
            lst = []
        if excl_stem:
            lst = [x for x in lst if x is None or x == q or stem(x) != stem(q)]
        seen = set()
        hits = []
        in_group = 0
        for x in lst[:k]:
            valid = x is not None and x != q and x not in seen
            seen.add(x)
            in_group += valid and tracks[x]['group'] == group
            hits.append(valid and tracks[x]['group'] == group and tracks[x]['label'] == t['label'])
        group_sum += in_group / k
        p_at_k = sum(hits) / k
        nn = 1.0 if hits and hits[0] else 0.0
        n += 1
        p_sum += p_at_k
        nn_sum += nn
        ceil_sum += min(k, others) / k
        # a random ranking of the candidates (every other track; with excl_stem, every other stem)
        candidates = sum(1 for p in tracks if stem(p) != stem(q)) if excl_stem else n_all - 1
        chance_sum += others / candidates
        pl = per_label[t['label']]
        pl[0] += 1
        pl[1] += p_at_k
        pl[2] += nn
    summary = {
        'queries': n,
        'p_at_k': round(p_sum / n, 4) if n else None,
        'nn1': round(nn_sum / n, 4) if n else None,
        'ceiling_p_at_k': round(ceil_sum / n, 4) if n else None,
        'chance_p_at_k': round(chance_sum / n, 4) if n else None,
        'same_group_at_k': round(group_sum / n, 4) if n else None,
        'n_singletons': singletons,
        'missing_queries': missing,
        '_sums': (p_sum, nn_sum, ceil_sum, chance_sum, group_sum),
    }
    labels = {lab: {'queries': v[0], 'p_at_k': round(v[1] / v[0], 4), 'nn1': round(v[2] / v[0], 4)}
              for lab, v in sorted(per_label.items())}
    return summary, labels


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('labels')
    ap.add_argument('neighbours')
    ap.add_argument('-k', type=int, default=5, help='precision at k (default 5)')
    ap.add_argument('--json', action='store_true', help='machine-readable output')
    ap.add_argument('--by-label', action='store_true', help='also per label')
    a = ap.parse_args()
    tracks = json.load(open(a.labels))['tracks']
    raw = json.load(open(a.neighbours))
    if not isinstance(raw, dict):
        sys.exit('score.py: NEIGHBOURS.json must be an object {query: [neighbours...]}')
    res = Resolver(a.labels, tracks)
    errors = collections.Counter()
    lists = {}
    for q, lst in raw.items():
        rq = res(q)
        if rq is None:
            errors['unknown_query'] += 1
            continue
        if rq in lists:
            errors['duplicate_query'] += 1
            continue
        if not isinstance(lst, list):
            errors['not_a_list'] += 1
            lst = []
        out = []
        seen = set()
        for x in lst:
            rx = res(x)
            if rx is None:
                errors['unknown_neighbour'] += 1
            elif rx == rq:
                errors['self_in_list'] += 1
            elif rx in seen:
                errors['repeated'] += 1
            seen.add(rx)
            out.append(rx)
        lists[rq] = out

    results, per_label = {}, {}
    for g in GROUPS:
        results[g], per_label[g] = score(tracks, lists, a.k, g)
    results['packages_excl_same_stem'], per_label['packages_excl_same_stem'] = \
        score(tracks, lists, a.k, 'packages', excl_stem=True)
    n = sum(results[g]['queries'] for g in GROUPS)
    sums = [sum(results[g]['_sums'][i] for g in GROUPS) for i in range(5)]
    results['overall'] = {
        'queries': n,
        'p_at_k': round(sums[0] / n, 4) if n else None,
        'nn1': round(sums[1] / n, 4) if n else None,
        'ceiling_p_at_k': round(sums[2] / n, 4) if n else None,
        'chance_p_at_k': round(sums[3] / n, 4) if n else None,
        'same_group_at_k': round(sums[4] / n, 4) if n else None,
        'n_singletons': sum(results[g]['n_singletons'] for g in GROUPS),
        'missing_queries': sum(results[g]['missing_queries'] for g in GROUPS),
    }
    for r in results.values():
        r.pop('_sums', None)
    doc = {'k': a.k, 'groups': results, 'errors': dict(errors), 'lists': len(raw)}
    if a.by_label:
        doc['by_label'] = per_label
    if a.json:
        json.dump(doc, sys.stdout, indent=1)
        print()
        return
    print(f'{"group":<26}{"queries":>8}{f"p@{a.k}":>8}{"1-NN":>8}{"ceiling":>9}{"chance":>8}{"in-group":>9}'
          f'{"singl.":>8}{"missing":>8}')
    for g, r in results.items():
        f = (lambda v: '-' if v is None else f'{v:.3f}')
        print(f'{g:<26}{r["queries"]:>8}{f(r["p_at_k"]):>8}{f(r["nn1"]):>8}{f(r["ceiling_p_at_k"]):>9}'
              f'{f(r["chance_p_at_k"]):>8}{f(r["same_group_at_k"]):>9}{r["n_singletons"]:>8}{r["missing_queries"]:>8}')
    print('errors: ' + (', '.join(f'{k} {v}' for k, v in sorted(errors.items())) or 'none'))
    if a.by_label:
        for g, labs in per_label.items():
            print(f'\n{g}:')
            for lab, r in labs.items():
                print(f'  {lab:<24}{r["queries"]:>4}  p@{a.k} {r["p_at_k"]:.3f}  1-NN {r["nn1"]:.3f}')


if __name__ == '__main__':
    main()
