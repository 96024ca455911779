#!/usr/bin/python3
"""make check-kubernetes: the Kubernetes recipe (dist/kubernetes) without a cluster.

1. schema: submit.sh's DRY_RUN=1 output for three sets of variables, every document checked against
   the Kubernetes client's models (Debian's python3-kubernetes): an unknown field, a value of the wrong
   type or a required field missing fails. The checker must reject deliberately broken manifests
   (a misspelt field, a string for a number, a container without a name, an unknown kind).
2. consistency: completions == parallelism == the pods' SHARDS; every claim, service account, Role
   and image named the same everywhere; the library read-only; TTLs, non-root, read-only roots.
3. bash -n on submit.sh and on every container's script; submit.sh's fallback image version is the
   source's version.
4. submit.sh against a fake kubectl (records what it applies, answers canned cluster states): what a
   first run and a re-run apply, and every check that stops it before anything is applied; WAIT=1.
5. the merge Job's "wait" container script against a fake API server (HTTPS, a self-signed CA as the
   service account's ca.crt, the token checked): Complete, Failed (an index gave up), a Job that is
   gone, a refusal (403), a Job that never ends (WAIT_TIMEOUT), an API that does not answer, no curl.
6. the scan and merge containers' scripts with a stand-in naviscan: marks, skip when complete,
   RESCAN=1, SIGTERM passed on to the scan, the merge of the complete shards naming the others.
7. with --naviscan PATH: the same scripts with the real naviscan, over a library of four tones: a shard
   that cannot start is left unmarked and named by the merge, which merges the other; after the fix
   a complete shard is skipped and the merged store holds every track.

Usage: scripts/ci/check-kubernetes.py [--naviscan PATH]   (needs python3-yaml, python3-kubernetes, curl, openssl)
       scripts/ci/check-kubernetes.py --validate FILE...   (only the schema check of those manifests,
       e.g. DRY_RUN=1 dist/kubernetes/submit.sh > run.yaml; exit 1 naming every error)
"""
import http.server
import inspect
import json
import math
import os
import re
import shutil
import signal
import sqlite3
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import wave

import yaml
from kubernetes.client import models

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUBMIT = os.path.join(REPO, "dist/kubernetes/submit.sh")

# ---------------------------------------------------------------------------------------------------
# 1. The schema, from the client's models.

KINDS = {
    ("batch/v1", "Job"): "V1Job",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("v1", "PersistentVolume"): "V1PersistentVolume",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("rbac.authorization.k8s.io/v1", "Role"): "V1Role",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "V1RoleBinding",
}
# Fields Kubernetes added after the models this client has (python3-kubernetes 22.6: Kubernetes 1.22),
# with their API types; used only where a model lacks the field. backoffLimitPerIndex: 1.29 (beta).
NEWER_FIELDS = {
    "V1JobSpec": {"backoffLimitPerIndex": "int", "maxFailedIndexes": "int", "podReplacementPolicy": "str"},
}
# A resource quantity may be written as a number ("cpu: 2"); the models call them str.
QUANTITY_MAPS = {"requests", "limits", "capacity"}
QUANTITY_FIELDS = {"size_limit"}
_required_cache = {}


def required_fields(cls):
    """The model's attributes whose setter refuses None (the client's own required fields)."""
    if cls not in _required_cache:
        found = set()
        for attr in cls.openapi_types:
            prop = getattr(cls, attr, None)
            if isinstance(prop, property) and prop.fset and "must not be `None`" in inspect.getsource(prop.fset):
                found.add(attr)
        _required_cache[cls] = found
    return _required_cache[cls]


def check_value(value, type_name, path, errors, quantity=False):
    if type_name == "object":
        return
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: a list expected, not {type(value).__name__}")
            return
        for i, item in enumerate(value):
            check_value(item, type_name[5:-1], f"{path}[{i}]", errors)
        return
    if type_name.startswith("dict("):
        if not isinstance(value, dict):
            errors.append(f"{path}: a map expected, not {type(value).__name__}")
            return
        inner = type_name[5:-1].split(", ", 1)[1]
        for key, item in value.items():
            if not isinstance(key, str):
                errors.append(f"{path}: key {key!r} is not a string")
            check_value(item, inner, f"{path}.{key}", errors, quantity=path.rsplit(".", 1)[-1] in QUANTITY_MAPS)
        return
    simple = {"str": str, "int": int, "bool": bool, "float": (int, float), "datetime": str, "date": str}
    if type_name in simple:
        ok = isinstance(value, simple[type_name]) and not (type_name in ("int", "float") and isinstance(value, bool))
        if type_name == "str" and quantity and isinstance(value, (int, float)) and not isinstance(value, bool):
            ok = True
        if not ok:
            errors.append(f"{path}: {type_name} expected, not {type(value).__name__} {value!r}")
        return
    cls = getattr(models, type_name, None)
    if cls is None:
        errors.append(f"{path}: the models have no type {type_name}")
        return
    if not isinstance(value, dict):
        errors.append(f"{path}: an object ({type_name}) expected, not {type(value).__name__} {value!r}")
        return
    by_key = {key: attr for attr, key in cls.attribute_map.items()}
    for key, item in value.items():
        if key in by_key:
            attr = by_key[key]
            check_value(item, cls.openapi_types[attr], f"{path}.{key}", errors, quantity=attr in QUANTITY_FIELDS)
        elif key in NEWER_FIELDS.get(type_name, {}):
            check_value(item, NEWER_FIELDS[type_name][key], f"{path}.{key}", errors)
        else:
            errors.append(f"{path}.{key}: unknown field (not in {type_name})")
    for attr in sorted(required_fields(cls)):
        if value.get(cls.attribute_map[attr]) is None:
            errors.append(f"{path}.{cls.attribute_map[attr]}: required ({type_name}) but missing")


def check_document(doc):
    """The errors of one manifest document (an empty list when it is valid)."""
    if not isinstance(doc, dict):
        return [f"document is a {type(doc).__name__}, not an object"]
    key = (doc.get("apiVersion"), doc.get("kind"))
    name = (doc.get("metadata") or {}).get("name", "?")
    if key not in KINDS:
        return [f"{key[1]} {name}: apiVersion/kind {key[0]}/{key[1]} is not one this check knows"]
    errors = []
    check_value(doc, KINDS[key], f"{key[1]} {name}", errors)
    return errors


# ---------------------------------------------------------------------------------------------------
# Running submit.sh and the containers' scripts.

def run(args, env=None, input=None, timeout=60):
    full = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
    full.update(env or {})
    return subprocess.run(args, env=full, input=input, capture_output=True, text=True, timeout=timeout)


def render(**variables):
    result = run(["/bin/bash", SUBMIT], {"DRY_RUN": "1", **variables})
    if result.returncode != 0:
        raise AssertionError(f"submit.sh DRY_RUN=1 exit {result.returncode}: {result.stderr}")
    return [d for d in yaml.safe_load_all(result.stdout) if d is not None]


def find(docs, kind, name=None, prefix=None):
    for d in docs:
        n = d.get("metadata", {}).get("name", "")
        if d.get("kind") == kind and (name is None or n == name) and (prefix is None or n.startswith(prefix)):
            return d
    return None


def pod(job):
    return job["spec"]["template"]["spec"]


def container(job, name):
    spec = pod(job)
    for c in spec.get("initContainers", []) + spec.get("containers", []):
        if c["name"] == name:
            return c
    raise AssertionError(f"no container {name} in {job['metadata']['name']}")


def env_of(c):
    return {e["name"]: e.get("value") for e in c.get("env", [])}


def script_of(c):
    assert c["command"] == ["/bin/bash", "-c"], c["command"]
    return c["args"][0]


def claim_of(job, volume):
    for v in pod(job).get("volumes", []):
        if v["name"] == volume:
            return v["persistentVolumeClaim"]
    raise AssertionError(f"no volume {volume}")


def consistency(docs, shards):
    """The documents of one run agree with each other; returns the scan and merge Jobs."""
    scan, merge = find(docs, "Job", prefix="naviscan-scan-"), find(docs, "Job", prefix="naviscan-merge-")
    assert scan and merge, "a scan Job and a merge Job"
    spec = scan["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == shards, (spec["completions"], spec["parallelism"], shards)
    sc, mc, wc = container(scan, "scan"), container(merge, "merge"), container(merge, "wait")
    assert env_of(sc)["SHARDS"] == env_of(mc)["SHARDS"] == str(shards)
    assert '--shard "auto/$SHARDS"' in script_of(sc) and "$JOB_COMPLETION_INDEX" in script_of(sc)
    assert "naviscan merge" in script_of(mc)
    # The same folders and marks in both scripts.
    for text in ("shards=$DATA/shards", "shard-$k.complete", "$k/$SHARDS"):
        assert text in script_of(sc) and text in script_of(mc), text
    assert env_of(sc)["DATA"] == env_of(mc)["DATA"] == "/data"
    assert env_of(wc)["SCAN_JOB"] == scan["metadata"]["name"]
    run_id = scan["metadata"]["name"][len("naviscan-scan-"):]
    assert merge["metadata"]["name"] == "naviscan-merge-" + run_id and env_of(sc)["RUN"] == env_of(mc)["RUN"] == run_id
    # One image everywhere.
    images = {c["image"] for job in (scan, merge) for c in pod(job).get("initContainers", []) + pod(job)["containers"]}
    assert len(images) == 1, images
    assert env_of(wc)["IMAGE"] in images
    # The claims: the same data claim; the library read-only; claims made here are the ones used.
    assert claim_of(scan, "data")["claimName"] == claim_of(merge, "data")["claimName"]
    library = claim_of(scan, "music")
    assert library.get("readOnly") is True
    mounts = {m["name"]: m for m in sc["volumeMounts"]}
    assert mounts["music"]["readOnly"] is True and mounts["music"]["mountPath"] == env_of(sc)["NAVISCAN_LIBRARY"]
    assert mounts["data"]["mountPath"] == "/data" and {m["mountPath"] for m in mc["volumeMounts"]} >= {"/data", "/tmp"}
    data_pvc = find(docs, "PersistentVolumeClaim", claim_of(scan, "data")["claimName"])
    if data_pvc:
        assert data_pvc["spec"]["accessModes"] == ["ReadWriteMany"] and data_pvc["spec"].get("storageClassName")
    lib_pvc = find(docs, "PersistentVolumeClaim", library["claimName"])
    pv = find(docs, "PersistentVolume")
    if lib_pvc or pv:
        assert lib_pvc and pv, "the NFS volume comes with its claim"
        assert lib_pvc["spec"]["accessModes"] == pv["spec"]["accessModes"] == ["ReadOnlyMany"]
        assert lib_pvc["spec"]["volumeName"] == pv["metadata"]["name"]
        assert pv["spec"]["claimRef"]["name"] == lib_pvc["metadata"]["name"]
        assert pv["spec"]["nfs"]["readOnly"] is True and lib_pvc["spec"]["storageClassName"] == pv["spec"]["storageClassName"] == ""
    # The service account, its Role and binding.
    account = pod(merge)["serviceAccountName"]
    sa, role, binding = find(docs, "ServiceAccount", account), find(docs, "Role"), find(docs, "RoleBinding")
    assert sa and role and binding
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]}
    assert {"kind": "ServiceAccount", "name": account} == {k: binding["subjects"][0][k] for k in ("kind", "name")}
    assert any("batch" in r["apiGroups"] and "jobs" in r["resources"] and "get" in r["verbs"] for r in role["rules"])
    assert pod(scan).get("automountServiceAccountToken") is False, "the scan pods need no API token"
    # Re-runs and safety.
    for job in (scan, merge):
        assert job["spec"].get("ttlSecondsAfterFinished", 0) > 0 and job["spec"].get("activeDeadlineSeconds", 0) > 0
        ps = pod(job)["securityContext"]
        assert ps["runAsUser"] == ps["runAsGroup"] == ps["fsGroup"] == 990 and ps["runAsNonRoot"] is True
        assert pod(job)["restartPolicy"] == "Never"
        for c in pod(job).get("initContainers", []) + pod(job)["containers"]:
            cs = c["securityContext"]
            assert cs["allowPrivilegeEscalation"] is False and cs["readOnlyRootFilesystem"] is True
            assert cs["capabilities"] == {"drop": ["ALL"]}
            assert "limits" in c["resources"] and "memory" in c["resources"]["limits"]
    assert merge["spec"]["activeDeadlineSeconds"] > int(env_of(wc)["WAIT_TIMEOUT"]) > scan["spec"]["activeDeadlineSeconds"]
    assert spec.get("backoffLimitPerIndex", 0) >= 1
    return scan, merge


# ---------------------------------------------------------------------------------------------------
# 4. A fake kubectl: answers from a JSON "world", logs every call (and what apply reads) to a file.

FAKE_KUBECTL = r'''#!/usr/bin/python3
import json, os, sys
world = json.load(open(os.environ["FAKE_WORLD"]))
args = [a for a in sys.argv[1:] if not a.startswith("--request-timeout")]
stdin = sys.stdin.read() if "apply" in args else None
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"args": args, "stdin": stdin}) + "\n")
ns = args[args.index("-n") + 1] if "-n" in args else None
if "-n" in args:
    i = args.index("-n"); del args[i:i + 2]
while args and args[0].startswith("--"):
    args = args[2:] if "=" not in args[0] else args[1:]
def fail(message):
    sys.stderr.write(message + "\n"); sys.exit(1)
if args[:1] == ["version"]:
    if world.get("unreachable"):
        print('{"clientVersion": {"major": "1", "minor": "32"}}')
        fail("The connection to the server localhost:8080 was refused - did you specify the right host or port?")
    print(json.dumps({"clientVersion": {"major": "1", "minor": "32"}, "serverVersion": {"major": "1", "minor": world.get("minor", "30")}}, indent=2))
elif args[:2] == ["config", "view"]:
    print(world.get("context_namespace", ""), end="")
elif args[:2] == ["auth", "can-i"]:
    answer = world.get("can_i", {}).get(args[3], "yes")
    print(answer); sys.exit(0 if answer == "yes" else 1)
elif args[:1] == ["get"]:
    kind, name = args[1], args[2]
    if kind in world.get("forbidden", []):
        fail(f'Error from server (Forbidden): {kind} "{name}" is forbidden')
    obj = world.get("objects", {}).get(f"{kind}/{name}")
    if kind == "namespace" and name not in world.get("missing_namespaces", []):
        obj = {}
    out = args[args.index("-o") + 1]
    if out == "name":
        print(f"{kind}/{name}" if obj is not None else "", end="")
    elif obj is None:
        fail(f'Error from server (NotFound): {kind} "{name}" not found')
    elif "accessModes" in out:
        print(json.dumps(obj.get("accessModes", [])), end="")
    elif "conditions" in out:
        counter = os.environ["FAKE_LOG"] + ".polls"
        n = int(open(counter).read()) if os.path.exists(counter) else 0
        open(counter, "w").write(str(n + 1))
        states = obj["conditions"]
        print(states[min(n, len(states) - 1)], end="")
elif args[:1] == ["apply"]:
    if world.get("apply_fails"):
        fail("error: the server could not apply")
    world.setdefault("objects", {}).update(world.get("after_apply", {}))
    json.dump(world, open(os.environ["FAKE_WORLD"], "w"))
    for doc in stdin.split("\n---\n"):
        kind = [l for l in doc.splitlines() if l.startswith("kind:")]
        if kind: print(kind[0].split()[1].lower() + " configured")
elif args[:1] == ["logs"]:
    print("naviscan-merge: exit status " + world.get("merge_status", "0"))
else:
    fail("fake kubectl: no answer for " + " ".join(args))
'''


class Fake:
    def __init__(self, scratch):
        self.dir = tempfile.mkdtemp(dir=scratch)
        self.kubectl = os.path.join(self.dir, "kubectl")
        with open(self.kubectl, "w") as f:
            f.write(FAKE_KUBECTL)
        os.chmod(self.kubectl, 0o755)

    def submit(self, world, **variables):
        world_file, log = os.path.join(self.dir, "world.json"), os.path.join(self.dir, "calls.log")
        for stale in (log, log + ".polls"):
            if os.path.exists(stale):
                os.remove(stale)
        with open(world_file, "w") as f:
            json.dump(world, f)
        env = {"KUBECTL": self.kubectl, "FAKE_WORLD": world_file, "FAKE_LOG": log, "WAIT_POLL_SECONDS": "0.05"}
        result = run(["/bin/bash", SUBMIT], {**env, **variables})
        calls = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
        for c in calls:  # "cmd": the arguments without -n NAMESPACE and kubectl's own options
            cmd = list(c["args"])
            if "-n" in cmd:
                i = cmd.index("-n")
                c["namespace"] = cmd[i + 1]
                del cmd[i:i + 2]
            while cmd and cmd[0].startswith("--"):
                cmd = cmd[2:]
            c["cmd"] = cmd
        applied = [c for c in calls if c["cmd"][:1] == ["apply"]]
        docs = [d for c in applied for d in yaml.safe_load_all(c["stdin"]) if d is not None]
        return result, calls, applied, docs


# ---------------------------------------------------------------------------------------------------
# 5. A fake API server for the wait container.

class FakeAPI:
    """Serves GET /apis/batch/v1/namespaces/NS/jobs/NAME from a list of (status, body) replies."""

    def __init__(self, scratch, tls):
        self.replies, self.requests = [], []
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                api.requests.append((self.path, self.headers.get("Authorization")))
                if self.headers.get("Authorization") != "Bearer sa-token":
                    code, body = 401, {"kind": "Status", "code": 401}
                else:
                    code, body = api.replies[min(len(api.requests) - 1, len(api.replies) - 1)]
                data = json.dumps(body, separators=(",", ":")).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.sa = tempfile.mkdtemp(dir=scratch)
        with open(os.path.join(self.sa, "token"), "w") as f:
            f.write("sa-token")
        with open(os.path.join(self.sa, "namespace"), "w") as f:
            f.write("music")
        scheme = "http"
        if tls:
            key, cert = os.path.join(self.sa, "key.pem"), os.path.join(self.sa, "ca.crt")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                            "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                            "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        else:
            open(os.path.join(self.sa, "ca.crt"), "w").close()
        self.url = f"{scheme}://localhost:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, script, replies, path_env=None, **env):
        self.replies, self.requests = replies, []
        variables = {"SA_DIR": self.sa, "API_SERVER": self.url, "SCAN_JOB": "naviscan-scan-t1", "IMAGE": "localhost/naviscan:0.5.9",
                     "WAIT_TIMEOUT": "30", "POLL_SECONDS": "0.1", **env}
        if path_env:
            variables["PATH"] = path_env
        started = time.monotonic()
        result = run(["/bin/bash", "-c", script], variables, timeout=60)
        return result, time.monotonic() - started


def job_status(conditions=(), completed=None, failed=None):
    status = {"active": 1}
    if completed:
        status["completedIndexes"] = completed
    if failed:
        status["failedIndexes"] = failed
    if conditions:
        status["conditions"] = [{"type": t, "status": "True", "lastProbeTime": "2026-01-01T00:00:00Z",
                                 "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": r, "message": "m"} for t, r in conditions]
    return {"kind": "Job", "apiVersion": "batch/v1", "metadata": {"name": "naviscan-scan-t1"},
            "spec": {"completions": 4, "completionMode": "Indexed"}, "status": status}


# ---------------------------------------------------------------------------------------------------

STUB_NAVISCAN = r'''#!/bin/bash
# A stand-in naviscan: scan makes its --out folder (or waits for SIGTERM when STUB_HANG is set);
# merge lists what it was given. Every call is logged.
echo "$*" >> "$STUB_LOG"
case $1 in
  scan)
    out=; while (( $# )); do [[ $1 == --out ]] && out=$2; shift; done
    if [[ -n ${STUB_HANG:-} ]]; then
      trap 'echo "scan: SIGTERM" >> "$STUB_LOG"; exit 1' TERM
      echo started > "$STUB_HANG"
      while :; do sleep 0.05; done
    fi
    mkdir -p "$out" || exit 2
    echo "scanned into $out"; exit "${STUB_STATUS:-0}" ;;
  merge) echo "merged ${*:3}"; exit 0 ;;
esac
'''


def main(naviscan=None):
    scratch = tempfile.mkdtemp(prefix="naviscan-check-kubernetes.")
    results = []

    def test(name):
        def wrap(fn):
            started = time.monotonic()
            try:
                fn()
                results.append((name, None))
                print(f"   ok: {name} ({time.monotonic() - started:.1f} s)")
            except Exception as error:  # noqa: BLE001 - any failure is reported
                results.append((name, error))
                print(f"FAIL: {name}: {error}")
                traceback.print_exc()
            return fn
        return wrap

    print("== schema and consistency (python3-kubernetes " + __import__("kubernetes").__version__ + " models)")
    variants = {
        "NFS library, new data claim": dict(SHARDS="4", CPUS="3", RUN="t1", NAMESPACE="music", LIBRARY_NFS="nas.example.org:/export/music",
                                            STORAGE_CLASS="nfs-rwx", DATA_SIZE="200Gi", IMAGE="registry.example.org/naviscan:0.5.9"),
        "existing claims, a library subfolder": dict(SHARDS="16", RUN="weekly", LIBRARY_CLAIM="music", LIBRARY_SUBPATH="Music/Lossless",
                                                     DATA_CLAIM="scratch", RESCAN="1"),
        "defaults": dict(RUN="defaults"),
    }
    rendered = {}

    @test("the checker rejects broken manifests (misspelt field, wrong type, missing name, unknown kind)")
    def _():
        docs = render(**variants["NFS library, new data claim"])
        job = find(docs, "Job", prefix="naviscan-scan-")
        assert check_document(job) == [], check_document(job)
        broken = json.loads(json.dumps(job))
        broken["spec"]["paralelism"] = broken["spec"].pop("parallelism")
        errors = check_document(broken)
        assert any("spec.paralelism: unknown field" in e for e in errors), errors
        broken = json.loads(json.dumps(job))
        broken["spec"]["completions"] = "4"
        assert any("spec.completions: int expected" in e for e in check_document(broken))
        broken = json.loads(json.dumps(job))
        del pod(broken)["containers"][0]["name"]
        assert any("containers[0].name: required" in e for e in check_document(broken))
        broken = json.loads(json.dumps(job))
        pod(broken)["containers"][0]["volumeMounts"][0]["readonly"] = True
        assert any("volumeMounts[0].readonly: unknown field" in e for e in check_document(broken))
        broken = json.loads(json.dumps(job))
        broken["spec"]["backoffLimitPerIndex"] = "2"
        assert any("backoffLimitPerIndex: int expected" in e for e in check_document(broken))
        assert check_document({"apiVersion": "batch/v1", "kind": "CronJobs", "metadata": {"name": "x"}})
        broken = json.loads(json.dumps(job))
        pod(broken)["securityContext"]["runAsNonRoot"] = "true"
        assert any("runAsNonRoot: bool expected" in e for e in check_document(broken))

    for label, variables in variants.items():
        @test(f"schema: every document of submit.sh DRY_RUN=1 ({label})")
        def _(label=label, variables=variables):
            docs = render(**variables)
            rendered[label] = docs
            errors = [e for d in docs for e in check_document(d)]
            assert not errors, "\n  ".join(errors)

        @test(f"consistency: Jobs, claims, service account, image ({label})")
        def _(label=label, variables=variables):
            docs = rendered.get(label) or render(**variables)
            consistency(docs, int(variables.get("SHARDS", "8")))

    @test("what each variant makes: PV and claims only when asked; the subfolder, RESCAN, defaults")
    def _():
        kinds = lambda docs: sorted(d["kind"] for d in docs)
        nfs, claims, defaults = (rendered.get(k) or render(**v) for k, v in variants.items())
        assert kinds(nfs) == sorted(["PersistentVolume", "PersistentVolumeClaim", "PersistentVolumeClaim", "ServiceAccount",
                                     "Role", "RoleBinding", "Job", "Job"]), kinds(nfs)
        assert find(nfs, "PersistentVolume")["spec"]["nfs"] == {"server": "nas.example.org", "path": "/export/music", "readOnly": True}
        assert find(nfs, "RoleBinding")["subjects"][0]["namespace"] == "music"
        assert kinds(claims) == sorted(["ServiceAccount", "Role", "RoleBinding", "Job", "Job"]), kinds(claims)
        scan = find(claims, "Job", "naviscan-scan-weekly")
        assert {m["name"]: m.get("subPath") for m in container(scan, "scan")["volumeMounts"]}["music"] == "Music/Lossless"
        assert env_of(container(scan, "scan"))["RESCAN"] == "1" and claim_of(scan, "data")["claimName"] == "scratch"
        scan = find(defaults, "Job", "naviscan-scan-defaults")
        assert scan["spec"]["completions"] == 8 and container(scan, "scan")["image"] == "localhost/naviscan:0.6.0"
        assert container(scan, "scan")["resources"] == {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}
        assert claim_of(scan, "music")["claimName"] == "naviscan-library" and claim_of(scan, "data")["claimName"] == "naviscan-data"
        assert scan["spec"]["ttlSecondsAfterFinished"] == 604800 and scan["spec"]["activeDeadlineSeconds"] == 86400

    @test("bash -n: submit.sh and every container's script; the fallback image version is the source's")
    def _():
        result = run(["/bin/bash", "-n", SUBMIT])
        assert result.returncode == 0, result.stderr
        scan, merge = find(rendered["defaults"], "Job", prefix="naviscan-scan-"), find(rendered["defaults"], "Job", prefix="naviscan-merge-")
        for job, name in ((scan, "scan"), (merge, "wait"), (merge, "merge")):
            result = run(["/bin/bash", "-n", "-c", script_of(container(job, name))])
            assert result.returncode == 0, f"{name}: {result.stderr}"
        source = open(os.path.join(REPO, "Sources/NaviscanCore/Support/NaviscanVersion.swift")).read()
        version = re.search(r'"(\d+\.\d+\.\d+[^"]*)"', source).group(1)
        assert f"recipe_version={version}\n" in open(SUBMIT).read(), f"submit.sh's recipe_version is not {version}"

    print("== submit.sh against a fake kubectl")
    fake = Fake(scratch)
    base = {"NAMESPACE": "music", "RUN": "r1"}

    @test("a first run checks the cluster, then applies the NFS volume, both claims, the service account and both Jobs once")
    def _():
        result, calls, applied, docs = fake.submit({"objects": {"storageclass/rwx": {}}}, **base, LIBRARY_NFS="nas:/music", STORAGE_CLASS="rwx")
        assert result.returncode == 0, result.stderr
        assert len(applied) == 1 and applied[0]["cmd"] == ["apply", "-f", "-"] and applied[0]["namespace"] == "music"
        assert calls.index(applied[0]) == len(calls) - 1, "apply comes after every check"
        assert ["version", "-o", "json"] == calls[0]["cmd"]
        assert [d["kind"] for d in docs] == ["PersistentVolume", "PersistentVolumeClaim", "PersistentVolumeClaim", "ServiceAccount",
                                            "Role", "RoleBinding", "Job", "Job"], [d["kind"] for d in docs]
        assert not [e for d in docs for e in check_document(d)]
        consistency(docs, 8)
        for text in ("job naviscan-scan-r1", "logs -l job-name=naviscan-scan-r1", "logs job/naviscan-merge-r1 -c merge",
                     "shards/logs/scan-r1-K.log", "run this again with the same variables"):
            assert text in result.stderr, (text, result.stderr)

    @test("a re-run with the claims there applies no claim, only the service account and the new run's Jobs")
    def _():
        world = {"objects": {"storageclass/rwx": {}, "pvc/naviscan-library": {"accessModes": ["ReadOnlyMany"]}, "pvc/naviscan-data": {"accessModes": ["ReadWriteMany"]},
                             "job/naviscan-scan-r1": {}, "job/naviscan-merge-r1": {}}}
        result, calls, applied, docs = fake.submit(world, NAMESPACE="music", RUN="r2", LIBRARY_NFS="nas:/music", STORAGE_CLASS="rwx")
        assert result.returncode == 0, result.stderr
        assert [d["kind"] for d in docs] == ["ServiceAccount", "Role", "RoleBinding", "Job", "Job"]
        assert find(docs, "Job", "naviscan-scan-r2") and "warning" not in result.stderr
        # Without RUN a new name every time (the time of day).
        result, _, _, docs = fake.submit(world, NAMESPACE="music")
        assert result.returncode == 0 and re.fullmatch(r"naviscan-scan-\d{8}-\d{6}", find(docs, "Job", prefix="naviscan-scan-")["metadata"]["name"])

    @test("the namespace comes from the kubectl context when NAMESPACE is unset; KUBECTL may carry options")
    def _():
        world = {"context_namespace": "audio", "objects": {"storageclass/rwx": {}, "pvc/naviscan-library": {"accessModes": ["ReadWriteMany"]}}}
        result, calls, applied, docs = fake.submit(world, RUN="r3", STORAGE_CLASS="rwx", KUBECTL=fake.kubectl + " --context lab")
        assert result.returncode == 0, result.stderr
        assert applied[0]["namespace"] == "audio"
        assert find(docs, "RoleBinding")["subjects"][0]["namespace"] == "audio"
        assert any(c["args"][:2] == ["--context", "lab"] for c in calls)

    stops = [
        ("the cluster cannot be reached", {"unreachable": True}, {}, "does not reach the cluster"),
        ("Kubernetes 1.28 (no backoffLimitPerIndex)", {"minor": "28"}, {}, "needs 1.29"),
        ("the namespace does not exist", {"missing_namespaces": ["nowhere"]}, {"NAMESPACE": "nowhere"}, "namespace nowhere does not exist"),
        ("RUN used already", {"objects": {"job/naviscan-scan-r1": {}}}, {}, "RUN=r1 was used already"),
        ("no library claim, no LIBRARY_NFS", {"objects": {"pvc/naviscan-data": {"accessModes": ["ReadWriteMany"]}}}, {"LIBRARY_NFS": ""}, "set LIBRARY_CLAIM"),
        ("no data claim, no STORAGE_CLASS", {}, {"STORAGE_CLASS": ""}, "set STORAGE_CLASS"),
        ("the storage class does not exist", {}, {"STORAGE_CLASS": "nope"}, "storage class nope does not exist"),
        ("jobs may not be created", {"can_i": {"jobs.batch": "no"}}, {}, "may not create jobs.batch"),
        ("persistent volumes may not be created (LIBRARY_NFS)", {"can_i": {"persistentvolumes": "no"}}, {}, "may not create persistent volumes"),
        ("SHARDS is not a number", {}, {"SHARDS": "four"}, "SHARDS must be a whole number"),
        ("MEMORY is not a quantity", {}, {"MEMORY": "4 GB"}, "MEMORY must be a quantity"),
        ("RUN is not a name", {}, {"RUN": "Run_1"}, "RUN must be"),
        ("IMAGE with a quote", {}, {"IMAGE": 'x"y'}, "is not an image reference"),
        ("LIBRARY_SUBPATH leaves the volume", {}, {"LIBRARY_SUBPATH": "a/../../b"}, "no .."),
        ("LIBRARY_NFS without a path", {}, {"LIBRARY_NFS": "nas"}, "server:/export"),
        ("kubectl not found", {}, {"KUBECTL": "/nonexistent/kubectl"}, "is not on PATH"),
    ]
    for label, world, variables, message in stops:
        @test(f"stops before applying anything, exit 2: {label}")
        def _(world=world, variables=variables, message=message):
            world = {**world, "objects": {"storageclass/rwx": {}, **world.get("objects", {})}}
            all_vars = {**base, "LIBRARY_NFS": "nas:/music", "STORAGE_CLASS": "rwx", **variables}
            result, calls, applied, _ = fake.submit(world, **all_vars)
            assert result.returncode == 2 and not applied, (result.returncode, result.stderr, [c["args"] for c in calls])
            assert message in result.stderr, result.stderr

    @test("WAIT=1 follows the merge Job: exit 0 when it completes, 1 when it fails, with the merge's last lines")
    def _():
        world = {"objects": {"storageclass/rwx": {}}}
        for conditions, status in ((["", "", "Complete"], 0), (["", "FailureTarget", "FailureTarget Failed"], 1)):
            world["after_apply"] = {"job/naviscan-merge-r6": {"conditions": conditions}}
            result, calls, applied, _ = fake.submit(world, **{**base, "RUN": "r6"}, STORAGE_CLASS="rwx", LIBRARY_NFS="nas:/m", WAIT="1")
            assert result.returncode == status, (result.returncode, result.stderr)
            polls = [c for c in calls if c["cmd"][:3] == ["get", "job", "naviscan-merge-r6"] and "name" not in c["cmd"]]
            assert len(polls) == 3, [c["args"] for c in calls]
            assert "naviscan-merge: exit status" in result.stderr and ("complete" if status == 0 else "failed") in result.stderr.splitlines()[-1]

    print("== the merge Job's wait container against a fake API server")
    tls = shutil.which("openssl") is not None
    api = FakeAPI(scratch, tls)
    wait_script = script_of(container(find(rendered["defaults"], "Job", prefix="naviscan-merge-"), "wait"))

    @test(f"wait: polls until the scan Job is Complete ({'HTTPS with the service account CA' if tls else 'HTTP'}, the token sent)")
    def _():
        running = (200, job_status(completed="0-1"))
        result, _ = api.wait(wait_script, [running, running, (200, job_status([("Complete", "Completed")], completed="0-3"))])
        assert result.returncode == 0, result.stdout + result.stderr
        assert len(api.requests) == 3 and all(r == ("/apis/batch/v1/namespaces/music/jobs/naviscan-scan-t1", "Bearer sa-token") for r in api.requests), api.requests
        assert "job naviscan-scan-t1: running; indexes complete: 0-1" in result.stdout and "Complete; indexes complete: 0-3" in result.stdout, result.stdout
        assert result.stdout.count("running") == 1, "a state is said once"

    @test("wait: goes on when the scan Job Failed (an index gave up), naming the failed index")
    def _():
        failed = job_status([("FailureTarget", "FailedIndexes")], completed="0,1,3", failed="2")
        done = job_status([("FailureTarget", "FailedIndexes"), ("Failed", "FailedIndexes")], completed="0,1,3", failed="2")
        result, _ = api.wait(wait_script, [(200, job_status(completed="0")), (200, failed), (200, done)])
        assert result.returncode == 0 and len(api.requests) == 3, result.stdout + result.stderr
        assert "Failed (FailedIndexes); indexes complete: 0,1,3; failed: 2" in result.stdout, result.stdout
        result, _ = api.wait(wait_script, [(200, job_status([("Failed", "DeadlineExceeded")]))])
        assert result.returncode == 0 and "Failed (DeadlineExceeded)" in result.stdout

    @test("wait: a scan Job that is gone (404 four times) is not waited for")
    def _():
        result, _ = api.wait(wait_script, [(404, {"kind": "Status", "code": 404})])
        assert result.returncode == 0 and len(api.requests) == 4 and "does not exist" in result.stdout, result.stdout

    @test("wait: a refusal (403, no Role) fails the container with what to fix")
    def _():
        result, _ = api.wait(wait_script, [(403, {"kind": "Status", "code": 403})])
        assert result.returncode == 1 and "needs get on jobs" in result.stderr, result.stderr

    @test("wait: never longer than WAIT_TIMEOUT, for a Job that never ends and for an API that does not answer")
    def _():
        result, took = api.wait(wait_script, [(200, job_status(completed="0"))], WAIT_TIMEOUT="2")
        assert result.returncode == 0 and 1 <= took < 10 and "not finished after 2 s" in result.stdout, (took, result.stdout)
        result, took = api.wait(wait_script, [], WAIT_TIMEOUT="2", API_SERVER="https://localhost:1")
        assert result.returncode == 0 and took < 10 and "no answer from the API" in result.stderr, result.stderr

    @test("wait: an image without curl fails with what to do")
    def _():
        bare = tempfile.mkdtemp(dir=scratch)
        os.symlink("/bin/bash", os.path.join(bare, "bash"))
        result, _ = api.wait(wait_script, [(200, job_status())], path_env=bare)
        assert result.returncode == 1 and "has no curl" in result.stderr, result.stderr

    print("== the scan and merge containers' scripts, with a stand-in naviscan")
    docs = render(SHARDS="3", RUN="t9", LIBRARY_CLAIM="m", DATA_CLAIM="d")
    scan_job, merge_job = find(docs, "Job", prefix="naviscan-scan-"), find(docs, "Job", prefix="naviscan-merge-")
    work = tempfile.mkdtemp(dir=scratch)
    for folder in ("bin", "data", "tmp", "music"):
        os.makedirs(os.path.join(work, folder))
    with open(os.path.join(work, "bin/naviscan"), "w") as f:
        f.write(STUB_NAVISCAN)
    os.chmod(os.path.join(work, "bin/naviscan"), 0o755)
    stub_log = os.path.join(work, "naviscan.log")

    def pod_env(c, **extra):
        return {**env_of(c), "PATH": f"{work}/bin:/usr/bin:/bin", "DATA": f"{work}/data", "NAVISCAN_LIBRARY": f"{work}/music",
                "TMPDIR": f"{work}/tmp", "HOME": f"{work}/tmp", "STUB_LOG": stub_log, **extra}

    def pod_run(job, name, index=None, **extra):
        c = container(job, name)
        env = pod_env(c, **extra)
        if index is not None:
            env["JOB_COMPLETION_INDEX"] = str(index)
        return run(["/bin/bash", "-c", script_of(c)], env)

    shards = f"{work}/data/shards"

    @test("scan pods: exit 0 marks the shard K/N; a failure leaves no mark; a marked shard is skipped; RESCAN=1 scans it")
    def _():
        assert pod_run(scan_job, "scan", 0).returncode == 0
        assert open(f"{shards}/shard-0.complete").read().startswith("0/3 ")
        assert pod_run(scan_job, "scan", 1, STUB_STATUS="3").returncode == 3 and not os.path.exists(f"{shards}/shard-1.complete")
        open(stub_log, "w").close()
        result = pod_run(scan_job, "scan", 0)
        assert result.returncode == 0 and "shard 0/3 is complete" in result.stdout and open(stub_log).read() == "", result.stdout
        result = pod_run(scan_job, "scan", 0, RESCAN="1")
        assert result.returncode == 0 and "--shard auto/3 --out " + f"{shards}/shard-0 --jobs 2 --fail-on never" in open(stub_log).read()
        assert "scanned into" in open(f"{shards}/logs/scan-t9-0.log").read(), "the scan's output is in the log on the volume"
        # A mark of another split (0/4) is not this split's.
        with open(f"{shards}/shard-2.complete", "w") as f:
            f.write("2/4 2026-01-01T00:00:00Z\n")
        assert "is complete" not in pod_run(scan_job, "scan", 2, STUB_STATUS="1").stdout

    @test("scan pods: SIGTERM (the deadline, a deletion) is passed on to the scan, which stops; no mark")
    def _():
        c = container(scan_job, "scan")
        started = os.path.join(work, "started")
        env = {"PATH": "/usr/bin:/bin", **pod_env(c, STUB_HANG=started), "JOB_COMPLETION_INDEX": "1"}
        process = subprocess.Popen(["/bin/bash", "-c", script_of(c)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(200):
            if os.path.exists(started):
                break
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=10)
        assert process.returncode == 1, (process.returncode, out, err)
        assert "scan: SIGTERM" in open(stub_log).read() and "exit status 1" in out and not os.path.exists(f"{shards}/shard-1.complete")

    @test("merge: merges the complete shards, names the others, exit 1; all complete: merges all, exit 0")
    def _():
        open(stub_log, "w").close()
        result = pod_run(merge_job, "merge")
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"merge {work}/data/store {shards}/shard-0\n" in open(stub_log).read(), open(stub_log).read()
        assert "shards 1 2 of 3 did not complete" in result.stderr and "run submit.sh again" in result.stderr, result.stderr
        for k in (1, 2):
            with open(f"{shards}/shard-{k}.complete", "w") as f:
                f.write(f"{k}/3 2026-01-01T00:00:00Z\n")
        open(stub_log, "w").close()
        result = pod_run(merge_job, "merge")
        assert result.returncode == 0, result.stderr
        assert open(stub_log).read() == f"merge {work}/data/store {shards}/shard-0 {shards}/shard-1 {shards}/shard-2\n"
        assert "merged" in open(f"{shards}/logs/merge-t9.log").read()
        for k in range(3):
            os.remove(f"{shards}/shard-{k}.complete")
        open(stub_log, "w").close()
        result = pod_run(merge_job, "merge")
        assert result.returncode == 1 and open(stub_log).read() == "" and "shards 0 1 2 of 3" in result.stderr

    if naviscan:
        real_naviscan_pods(naviscan, scratch, test)

    api.server.shutdown()
    shutil.rmtree(scratch, ignore_errors=True)
    failed = [name for name, error in results if error]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    for name in failed:
        print(f"FAIL: {name}")
    return 1 if failed else 0


def write_tone(path, frequency, seconds=2, rate=44100):
    """A 16-bit stereo WAV sine at -12 dBFS."""
    frames = bytearray()
    for i in range(int(seconds * rate)):
        v = int(0.25 * 32767 * math.sin(2 * math.pi * frequency * i / rate))
        frames += struct.pack("<hh", v, v)
    with wave.open(path, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(frames))


def real_naviscan_pods(naviscan, scratch, test):
    """7. The scan and merge containers' scripts as shipped, with the real naviscan on PATH."""
    print(f"== the scan and merge containers' scripts, with the real naviscan ({naviscan})")
    docs = render(SHARDS="2", RUN="t2", LIBRARY_CLAIM="music", DATA_CLAIM="data")
    scan_job, merge_job = find(docs, "Job", prefix="naviscan-scan-"), find(docs, "Job", prefix="naviscan-merge-")
    work = tempfile.mkdtemp(dir=scratch)
    for folder in ("bin", "data/shards", "tmp", "music/a", "music/b"):
        os.makedirs(os.path.join(work, folder))
    os.symlink(naviscan, os.path.join(work, "bin/naviscan"))
    tones = [f"{work}/music/{folder}/tone-{f}.wav" for folder, f in (("a", 220), ("a", 330), ("b", 440), ("b", 550))]
    for path in tones:
        write_tone(path, int(path.rsplit("-", 1)[1][:-4]))
    shards, store = f"{work}/data/shards", f"{work}/data/store/naviscan.db"

    def pod_run(job, name, index=None):
        c = container(job, name)
        env = {**env_of(c), "PATH": f"{work}/bin:/usr/bin:/bin", "DATA": f"{work}/data", "NAVISCAN_LIBRARY": f"{work}/music",
               "TMPDIR": f"{work}/tmp", "HOME": f"{work}/tmp", "NAVISCAN_FFTW_WISDOM": ""}
        if index is not None:
            env["JOB_COMPLETION_INDEX"] = str(index)
        return run(["/bin/bash", "-c", script_of(c)], env, timeout=300)

    def store_rows():
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            ok = db.execute("select count(*) from track where status = 'ok'").fetchone()[0]
            shard = db.execute("select value from meta where name = 'shard'").fetchone()
        return ok, shard[0] if shard else None

    @test("real naviscan: a shard that cannot start exits 2 unmarked; the merge merges the other and names it, exit 1")
    def _():
        with open(f"{shards}/shard-1", "w") as f:
            f.write("in the way")   # shard 1's output folder cannot be made
        assert pod_run(scan_job, "scan", 0).returncode == 0
        assert open(f"{shards}/shard-0.complete").read().startswith("0/2 ")
        result = pod_run(scan_job, "scan", 1)
        assert result.returncode == 2 and not os.path.exists(f"{shards}/shard-1.complete"), (result.returncode, result.stdout)
        result = pod_run(merge_job, "merge")
        assert result.returncode == 1 and "shards 1 of 2 did not complete" in result.stderr, result.stderr
        ok, shard = store_rows()
        assert 0 < ok < len(tones) and shard is not None, (ok, shard)

    @test("real naviscan: after the fix a complete shard is skipped, the other scanned, the merged store whole")
    def _():
        os.remove(f"{shards}/shard-1")
        result = pod_run(scan_job, "scan", 0)
        assert result.returncode == 0 and "shard 0/2 is complete" in result.stdout, result.stdout
        assert pod_run(scan_job, "scan", 1).returncode == 0
        result = pod_run(merge_job, "merge")
        assert result.returncode == 0, result.stderr
        assert store_rows() == (len(tones), None), store_rows()
        logs = sorted(os.listdir(f"{shards}/logs"))
        assert logs == ["merge-t2.log", "scan-t2-0.log", "scan-t2-1.log"], logs


def validate_files(paths):
    errors = []
    for path in paths:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    errors += [f"{path}: {e}" for e in check_document(doc)]
    for e in errors:
        print(e)
    print(f"{len(paths)} files: {len(errors)} errors")
    return 1 if errors else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--validate"]:
        sys.exit(validate_files(sys.argv[2:]))
    if sys.argv[1:2] == ["--naviscan"] and len(sys.argv) == 3:
        sys.exit(main(os.path.abspath(sys.argv[2])))
    sys.exit(main())
