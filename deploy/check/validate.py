#!/usr/bin/env python3
"""Checks what `helm template` rendered from deploy/helm/augur, without a cluster.

For each rendered file (one release):
  - every object against the Kubernetes JSON schemas of each version named
    with --kube (kubernetes-validate, strict: a field Kubernetes does not
    know is an error); a ServiceMonitor against the Prometheus operator's
    CRD schema (servicemonitor.mjs);
  - the objects as a whole: Service, PodDisruptionBudget, NetworkPolicy and
    ServiceMonitor selectors match the pods or Services they are for, every
    named port exists, every ConfigMap, Secret and Secret key the pods read
    is rendered (or is a Secret named with --external-secret);
  - the pod lifecycle: liveness on /-/healthy and readiness on /-/ready of
    the admin port, a preStop sleep, a termination grace period above the
    preStop sleep plus augur's drain_timeout_ms; every container non-root,
    read-only root filesystem, no privilege escalation, every capability
    dropped;
  - augur itself (`augur --check-config`, the binary named with --augur)
    accepts the rendered config file and policy files with the environment
    the Deployment gives it: the config parses, the policies validate, and a
    listener on the pod's addresses has its API key or allow_unauthenticated,
    and the admin token.

Exit status 1 when anything fails, naming the file, the object and the problem.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import yaml
import kubernetes_validate

HERE = Path(__file__).resolve().parent


class Report:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def error(self, where: str, text: str) -> None:
        self.errors.append(f"{where}: {text}")


def load(path: Path) -> list[dict]:
    with path.open() as f:
        return [doc for doc in yaml.safe_load_all(f) if doc]


def ident(obj: dict) -> str:
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


def matches(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def schemas(objs: list[dict], versions: list[str], where: str, report: Report) -> list[dict]:
    """Kubernetes' own kinds against its schemas; the custom resources returned."""
    custom = []
    seen = set()
    for obj in objs:
        for field in ("apiVersion", "kind"):
            if not obj.get(field):
                report.error(where, f"an object without {field}: {obj}")
        name = obj.get("metadata", {}).get("name")
        if not name:
            report.error(where, f"{obj.get('kind')} without a name")
        if (obj.get("kind"), name) in seen:
            report.error(where, f"{ident(obj)} rendered twice")
        seen.add((obj.get("kind"), name))
        if obj.get("apiVersion", "").startswith("monitoring.coreos.com/"):
            custom.append(obj)
            continue
        for version in versions:
            try:
                kubernetes_validate.validate(obj, version, strict=True)
            except kubernetes_validate.ValidationError as e:
                path = ".".join(str(p) for p in e.path)
                report.error(where, f"{ident(obj)} is not a valid {obj.get('kind')} of Kubernetes {version}: {path}: {e.message}")
            except kubernetes_validate.SchemaNotFoundError as e:
                report.error(where, f"{ident(obj)}: {e.message}")
    return custom


def service_monitors(objs: list[dict], node_modules: Path, where: str, report: Report) -> None:
    if not objs:
        return
    out = subprocess.run(
        ["node", str(HERE / "servicemonitor.mjs"), str(node_modules)],
        input=json.dumps(objs),
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        for line in (out.stdout + out.stderr).strip().splitlines():
            report.error(where, line)


def pod_specs(objs: list[dict]) -> list[tuple[dict, dict, dict]]:
    """(workload, pod template labels, pod spec) of each Deployment."""
    return [
        (o, o["spec"]["template"]["metadata"].get("labels", {}), o["spec"]["template"]["spec"])
        for o in objs
        if o.get("kind") == "Deployment"
    ]


def container_ports(spec: dict) -> dict[str, int]:
    return {p["name"]: p.get("containerPort") for c in spec.get("containers", []) for p in c.get("ports", []) if "name" in p}


def relations(objs: list[dict], external: set[str], where: str, report: Report) -> None:
    pods = pod_specs(objs)
    by_kind: dict[str, dict[str, dict]] = {}
    for o in objs:
        by_kind.setdefault(o["kind"], {})[o["metadata"]["name"]] = o

    for dep, labels, _ in pods:
        sel = dep["spec"]["selector"].get("matchLabels", {})
        if not matches(sel, labels):
            report.error(where, f"{ident(dep)}: its selector {sel} does not match its pods' labels")

    def pods_of(selector: dict, what: str) -> list[tuple[dict, dict, dict]]:
        found = [p for p in pods if matches(selector, p[1])]
        if len(found) != 1:
            report.error(where, f"{what}: selector {selector} matches {len(found)} workloads, not one")
        return found

    for svc in by_kind.get("Service", {}).values():
        for _, _, spec in pods_of(svc["spec"].get("selector", {}), ident(svc)):
            ports = container_ports(spec)
            for p in svc["spec"]["ports"]:
                target = p.get("targetPort", p["port"])
                if isinstance(target, str) and target not in ports:
                    report.error(where, f"{ident(svc)}: targetPort {target!r} is no container port ({sorted(ports)})")

    for pdb in by_kind.get("PodDisruptionBudget", {}).values():
        pods_of(pdb["spec"]["selector"].get("matchLabels", {}), ident(pdb))

    for np in by_kind.get("NetworkPolicy", {}).values():
        targets = pods_of(np["spec"]["podSelector"].get("matchLabels", {}), ident(np))
        for rule in np["spec"].get("ingress", []):
            for peer in rule.get("from", []):
                pods_of(peer.get("podSelector", {}).get("matchLabels", {}), f"{ident(np)} ingress from")
            for port in rule.get("ports", []):
                for _, _, spec in targets:
                    if isinstance(port.get("port"), str) and port["port"] not in container_ports(spec):
                        report.error(where, f"{ident(np)}: port {port['port']!r} is no container port")

    secrets = {name: set((s.get("data") or {}) | (s.get("stringData") or {})) for name, s in by_kind.get("Secret", {}).items()}
    configmaps = {name: set(c.get("data") or {}) for name, c in by_kind.get("ConfigMap", {}).items()}

    def secret_key(name: str, key: str | None, what: str) -> None:
        if name in external:
            return
        if name not in secrets:
            report.error(where, f"{what}: Secret {name!r} is neither rendered nor named with --external-secret")
        elif key is not None and key not in secrets[name]:
            report.error(where, f"{what}: Secret {name!r} has no key {key!r} ({sorted(secrets[name])})")

    for sm in by_kind.get("ServiceMonitor", {}).values():
        services = [s for s in by_kind.get("Service", {}).values() if matches(sm["spec"]["selector"].get("matchLabels", {}), s["metadata"].get("labels", {}))]
        if len(services) != 1:
            report.error(where, f"{ident(sm)}: selects {len(services)} Services, not one")
        for ep in sm["spec"]["endpoints"]:
            for svc in services:
                if ep.get("port") not in {p.get("name") for p in svc["spec"]["ports"]}:
                    report.error(where, f"{ident(sm)}: port {ep.get('port')!r} is not a port of {ident(svc)}")
            creds = ep.get("authorization", {}).get("credentials")
            if creds:
                secret_key(creds["name"], creds["key"], ident(sm))

    for dep, _, spec in pods:
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for v in volumes.values():
            if "configMap" in v:
                name = v["configMap"]["name"]
                if name not in configmaps:
                    report.error(where, f"{ident(dep)}: volume {v['name']!r} reads ConfigMap {name!r}, which is not rendered")
                for item in v["configMap"].get("items", []):
                    if item["key"] not in configmaps.get(name, set()):
                        report.error(where, f"{ident(dep)}: ConfigMap {name!r} has no key {item['key']!r}")
            if "secret" in v:
                for item in v["secret"].get("items", []) or [None]:
                    secret_key(v["secret"]["secretName"], item["key"] if item else None, f"{ident(dep)} volume {v['name']!r}")
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            for m in c.get("volumeMounts", []):
                if m["name"] not in volumes:
                    report.error(where, f"{ident(dep)}: container {c['name']} mounts the missing volume {m['name']!r}")
            for e in c.get("env", []):
                ref = e.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    secret_key(ref["name"], ref["key"], f"{ident(dep)} env {e['name']}")
                ref = e.get("valueFrom", {}).get("configMapKeyRef")
                if ref and ref["key"] not in configmaps.get(ref["name"], set()):
                    report.error(where, f"{ident(dep)} env {e['name']}: ConfigMap {ref['name']!r} key {ref['key']!r} is not rendered")


def hardening(objs: list[dict], where: str, report: Report) -> None:
    for dep, _, spec in pod_specs(objs):
        pod = spec.get("securityContext", {})
        if pod.get("runAsNonRoot") is not True or not pod.get("runAsUser"):
            report.error(where, f"{ident(dep)}: the pod must run as a non-root user given by number (runAsNonRoot, runAsUser)")
        if spec.get("automountServiceAccountToken") is not False:
            report.error(where, f"{ident(dep)}: the pod mounts a service account token it does not need")
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            sc = c.get("securityContext", {})
            what = f"{ident(dep)} container {c['name']}"
            if sc.get("allowPrivilegeEscalation") is not False:
                report.error(where, f"{what}: allowPrivilegeEscalation must be false")
            if sc.get("readOnlyRootFilesystem") is not True:
                report.error(where, f"{what}: readOnlyRootFilesystem must be true")
            if sc.get("privileged"):
                report.error(where, f"{what}: privileged")
            if "ALL" not in sc.get("capabilities", {}).get("drop", []):
                report.error(where, f"{what}: capabilities must drop ALL")
            if not c.get("resources", {}).get("requests") or not c.get("resources", {}).get("limits", {}).get("memory"):
                report.error(where, f"{what}: needs resource requests and a memory limit")


def augur_pods(objs: list[dict]) -> list[tuple[dict, dict, dict]]:
    out = []
    for dep, _, spec in pod_specs(objs):
        for c in spec.get("containers", []):
            if c["name"] == "augur":
                out.append((dep, spec, c))
    return out


def env_of(container: dict) -> dict[str, dict]:
    return {e["name"]: e for e in container.get("env", [])}


def mounted(spec: dict, container: dict, path: str) -> tuple[dict, str] | None:
    """The volume holding `path` in the container, and the path inside it."""
    for m in container.get("volumeMounts", []):
        root = m["mountPath"].rstrip("/")
        if path == root or path.startswith(root + "/"):
            vol = next(v for v in spec["volumes"] if v["name"] == m["name"])
            return vol, path[len(root):].lstrip("/")
    return None


def files_of(volume: dict, objs: list[dict]) -> dict[str, str] | None:
    """What a ConfigMap volume holds (None for any other volume, or one not rendered)."""
    if "configMap" not in volume:
        return None
    for o in objs:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == volume["configMap"]["name"]:
            return dict(o.get("data") or {})
    return None


def lifecycle(objs: list[dict], where: str, report: Report) -> None:
    pods = augur_pods(objs)
    if len(pods) != 1:
        report.error(where, f"{len(pods)} augur containers rendered, not one")
        return
    dep, spec, c = pods[0]
    what = f"{ident(dep)} container augur"
    env = env_of(c)
    ports = container_ports(spec)
    admin_listen = env.get("AUGUR_ADMIN_LISTEN", {}).get("value", "")
    admin_port = admin_listen.rsplit(":", 1)[-1]
    if str(ports.get("admin")) != admin_port:
        report.error(where, f"{what}: the admin port {ports.get('admin')} is not where augur listens ({admin_listen!r})")
    if str(ports.get("http")) != env.get("AUGUR_LISTEN", {}).get("value", "").rsplit(":", 1)[-1]:
        report.error(where, f"{what}: the http port is not where augur listens")
    live = c.get("livenessProbe", {}).get("httpGet", {})
    if live.get("path") != "/-/healthy" or live.get("port") not in ("admin", ports.get("admin")):
        report.error(where, f"{what}: liveness must GET /-/healthy on the admin port: {c.get('livenessProbe')}")
    ready = " ".join(c.get("readinessProbe", {}).get("exec", {}).get("command", []))
    if "GET /-/ready " not in ready or f"/{admin_port} " not in ready or "$AUGUR_ADMIN_TOKEN" not in ready:
        report.error(where, f"{what}: readiness must GET /-/ready on the admin port with the admin token: {ready!r}")
    if "AUGUR_ADMIN_TOKEN" not in env or "valueFrom" not in env["AUGUR_ADMIN_TOKEN"]:
        report.error(where, f"{what}: AUGUR_ADMIN_TOKEN must come from a Secret")
    pre = c.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command", [])
    if len(pre) != 2 or pre[0] != "sleep":
        report.error(where, f"{what}: preStop must sleep: {pre}")
        return
    drain_ms = 30000
    config = mounted(spec, c, env.get("AUGUR_CONFIG", {}).get("value", ""))
    files = files_of(config[0], objs) if config else None
    if files is not None:
        text = files.get(config[1])
        if text is None:
            report.error(where, f"{what}: AUGUR_CONFIG names {config[1]!r}, which its ConfigMap lacks")
        else:
            try:
                drain_ms = tomllib.loads(text).get("server", {}).get("drain_timeout_ms", drain_ms)
            except tomllib.TOMLDecodeError as e:
                report.error(where, f"{what}: augur.toml is not TOML: {e}")
    grace = spec.get("terminationGracePeriodSeconds", 30)
    need = int(pre[1]) + math.ceil(drain_ms / 1000) + 1
    if grace < need:
        report.error(where, f"{what}: terminationGracePeriodSeconds {grace} < preStop {pre[1]} s + drain {drain_ms} ms + 1 s")


def check_config(objs: list[dict], augur: Path, schemas_dir: Path, where: str, report: Report) -> str | None:
    """`augur --check-config` on the rendered files with the pod's environment."""
    pods = augur_pods(objs)
    if len(pods) != 1:
        return None
    dep, spec, c = pods[0]
    env = env_of(c)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RUST_LOG": "warn"}
        for name, e in env.items():
            if "value" in e:
                run_env[name] = e["value"]
            elif "secretKeyRef" in e.get("valueFrom", {}):
                run_env[name] = f"check-{name.lower()}"
        for var, kind in (("AUGUR_CONFIG", "file"), ("AUGUR_POLICIES", "dir"), ("AUGUR_SCHEMAS", "dir")):
            path = run_env.get(var)
            if not path:
                report.error(where, f"{ident(dep)}: {var} is not set")
                return None
            found = mounted(spec, c, path)
            local = root / var.lower()
            if found is None:
                if var != "AUGUR_SCHEMAS":
                    report.error(where, f"{ident(dep)}: {var}={path} is in no mounted volume")
                    return None
                run_env[var] = str(schemas_dir)  # the image's schemas
                continue
            vol, inside = found
            files = files_of(vol, objs)
            if files is None:
                # A Secret of the operator's own (configSecret): augur's defaults stand in.
                files = {inside or "augur.toml": ""}
            if kind == "file":
                local.mkdir()
                if inside not in files:
                    report.error(where, f"{ident(dep)}: {var}={path}, but volume {vol['name']!r} has no {inside!r}")
                    return None
                (local / inside).write_text(files[inside])
                run_env[var] = str(local / inside)
            else:
                local.mkdir()
                for name, text in files.items():
                    (local / name).write_text(text)
                run_env[var] = str(local)
        out = subprocess.run([str(augur), "--check-config"], env=run_env, capture_output=True, text=True, cwd=tmp, check=False)
        if out.returncode != 0:
            report.error(where, f"augur --check-config refuses the rendered config: {out.stderr.strip()}")
            return None
        return out.stderr.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kube", action="append", required=True, help="a Kubernetes version to validate against")
    ap.add_argument("--augur", type=Path, required=True, help="the augur binary")
    ap.add_argument("--schemas", type=Path, required=True, help="the image's schemas directory")
    ap.add_argument("--node-modules", type=Path, required=True)
    ap.add_argument("--external-secret", action="append", default=[], help="a Secret the operator creates")
    ap.add_argument("renders", nargs="+", type=Path)
    args = ap.parse_args()
    args.augur = args.augur.resolve()
    args.schemas = args.schemas.resolve()

    report = Report()
    for path in args.renders:
        where = path.name
        try:
            objs = load(path)
        except yaml.YAMLError as e:
            report.error(where, f"not YAML: {e}")
            continue
        before = len(report.errors)
        custom = schemas(objs, args.kube, where, report)
        service_monitors(custom, args.node_modules, where, report)
        if len(report.errors) > before:
            continue  # the checks below read the objects as the schemas describe them
        said = None
        try:
            relations(objs, set(args.external_secret), where, report)
            hardening(objs, where, report)
            lifecycle(objs, where, report)
            said = check_config(objs, args.augur, args.schemas, where, report)
        except (KeyError, TypeError, StopIteration) as e:
            report.error(where, f"an object lacks what the checks read: {type(e).__name__} {e}")
        kinds = ", ".join(sorted({o["kind"] for o in objs}))
        if len(report.errors) == before:
            print(f"  {where}: {len(objs)} objects ({kinds}) valid for Kubernetes {', '.join(args.kube)}; {said}")
    for e in report.errors:
        print(f"ERROR {e}", file=sys.stderr)
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
