"""A small kustomize: renders deploy/k8s's kustomizations the way ``kubectl kustomize`` does,
for the features they use (no kustomize binary on the test machines).

Supported: ``resources`` (files and directories), ``components``, ``namespace``, ``patches``
(strategic merge, from ``path`` or inline ``patch``, matched by kind and name; ``$patch:
delete`` removes the resource), ``images`` and
``replicas``. Any other field is an error, so a manifest cannot come to rely on a feature this
renderer would silently skip. Strategic merge follows Kubernetes' merge keys for the lists the
manifests patch (containers and env by name, volume mounts by path, ports by number); any
other list is replaced whole, as kustomize does.

Run it as ``python tests/deploy/kustomize.py deploy/k8s/overlays/small`` to print the YAML.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import yaml

Manifest = dict[str, Any]

KNOWN_FIELDS = {
    "apiVersion", "kind", "namespace", "resources", "components", "patches", "images", "replicas",
}  # fmt: skip
CLUSTER_SCOPED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
    "PersistentVolume", "StorageClass", "PriorityClass",
}  # fmt: skip
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
}
"""The list fields merged item by item (by this key) rather than replaced, as Kubernetes'
strategic merge patch does for the fields the manifests patch."""
WORKLOADS = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job"}


class KustomizeError(ValueError):
    """A kustomization this renderer cannot render."""


def load_yaml(path: Path) -> list[Manifest]:
    """The YAML documents of ``path`` (empty ones skipped)."""
    docs = [doc for doc in yaml.safe_load_all(path.read_text("utf-8")) if doc is not None]
    for doc in docs:
        if not isinstance(doc, dict):
            raise KustomizeError(f"{path}: a document is not a mapping")
    return docs


def build(directory: Path, *, component: bool = False) -> list[Manifest]:
    """Render the kustomization in ``directory``: its manifests, in order."""
    spec = _kustomization(directory, component)
    manifests: list[Manifest] = []
    for entry in spec.get("resources", []):
        path = directory / entry
        manifests += build(path) if path.is_dir() else load_yaml(path)
    for entry in spec.get("components", []):
        manifests = _apply_component(manifests, directory / entry)
    for entry in spec.get("patches", []):
        _apply_patch(manifests, _patch_documents(directory, entry), entry.get("target"))
    if "namespace" in spec:
        for manifest in manifests:
            if manifest["kind"] not in CLUSTER_SCOPED:
                manifest.setdefault("metadata", {})["namespace"] = spec["namespace"]
    for image in spec.get("images", []):
        _set_image(manifests, image)
    for replicas in spec.get("replicas", []):
        _set_replicas(manifests, replicas)
    _check_unique(manifests, directory)
    return manifests


def _kustomization(directory: Path, component: bool) -> Manifest:
    path = directory / "kustomization.yaml"
    if not path.exists():
        raise KustomizeError(f"{directory}: no kustomization.yaml")
    docs = load_yaml(path)
    if len(docs) != 1:
        raise KustomizeError(f"{path}: one document expected")
    spec = docs[0]
    unknown = set(spec) - KNOWN_FIELDS
    if unknown:
        raise KustomizeError(f"{path}: fields this renderer does not know: {sorted(unknown)}")
    kind = "Component" if component else "Kustomization"
    if spec.get("kind") != kind:
        raise KustomizeError(f"{path}: kind {spec.get('kind')!r}, expected {kind}")
    return spec


def _apply_component(manifests: list[Manifest], directory: Path) -> list[Manifest]:
    """A component adds its resources to the accumulated ones and patches them all."""
    spec = _kustomization(directory, component=True)
    if set(spec) & {"namespace", "components"}:
        raise KustomizeError(f"{directory}: namespace or components in a component")
    merged = manifests + [m for e in spec.get("resources", []) for m in load_yaml(directory / e)]
    for entry in spec.get("patches", []):
        _apply_patch(merged, _patch_documents(directory, entry), entry.get("target"))
    return merged


def _patch_documents(directory: Path, entry: Manifest) -> list[Manifest]:
    if "path" in entry:
        return load_yaml(directory / entry["path"])
    if "patch" in entry:
        return [doc for doc in yaml.safe_load_all(entry["patch"]) if doc is not None]
    raise KustomizeError(f"{directory}: a patch without path or patch")


def _apply_patch(
    manifests: list[Manifest], patches: list[Manifest], target: Manifest | None
) -> None:
    for patch in patches:
        kind = (target or {}).get("kind", patch.get("kind"))
        name = (target or {}).get("name", patch.get("metadata", {}).get("name"))
        matches = [m for m in manifests if m["kind"] == kind and m["metadata"]["name"] == name]
        if len(matches) != 1:
            raise KustomizeError(f"patch for {kind}/{name} matches {len(matches)} manifests")
        if patch.get("$patch") == "delete":
            manifests.remove(matches[0])
            continue
        body = {k: v for k, v in patch.items() if k not in ("apiVersion", "kind")}
        merged = strategic_merge(matches[0], body)
        matches[0].clear()
        matches[0].update(merged)


def strategic_merge(base: Any, patch: Any, field: str = "") -> Any:
    """``patch`` merged into ``base`` (a new object): mappings key by key, a null deletes,
    the lists of :data:`MERGE_KEYS` item by item, any other list replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = strategic_merge(merged[key], value, key)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(patch, list) and field in MERGE_KEYS:
        key = MERGE_KEYS[field]
        merged_list = copy.deepcopy(base)
        added = []
        for item in patch:
            same = (i for i, old in enumerate(merged_list) if old.get(key) == item[key])
            index = next(same, None)
            if index is None:
                added.append(copy.deepcopy(item))
            else:
                merged_list[index] = strategic_merge(merged_list[index], item)
        return added + merged_list  # kustomize puts the items a patch adds first
    return copy.deepcopy(patch)


def pod_spec(manifest: Manifest) -> Manifest | None:
    """The pod spec of a workload manifest (None for other kinds)."""
    if manifest["kind"] not in WORKLOADS:
        return None
    spec: Manifest = manifest["spec"]["template"]["spec"]
    return spec


def containers(manifest: Manifest) -> list[Manifest]:
    """The containers and init containers of a workload manifest."""
    spec = pod_spec(manifest) or {}
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def _set_image(manifests: list[Manifest], image: Manifest) -> None:
    for manifest in manifests:
        for container in containers(manifest):
            ref = container["image"]
            name = ref.split("@")[0].rsplit(":", 1)[0] if ":" in ref.split("/")[-1] else ref
            if name != image["name"]:
                continue
            new = image.get("newName", name)
            if "digest" in image:
                container["image"] = f"{new}@{image['digest']}"
            else:
                tag = image.get("newTag")
                container["image"] = f"{new}:{tag}" if tag else new


def _set_replicas(manifests: list[Manifest], replicas: Manifest) -> None:
    found = [
        m for m in manifests if m["kind"] in WORKLOADS and m["metadata"]["name"] == replicas["name"]
    ]
    if not found:
        raise KustomizeError(f"replicas: no workload {replicas['name']!r}")
    for manifest in found:
        manifest["spec"]["replicas"] = replicas["count"]


def _check_unique(manifests: list[Manifest], directory: Path) -> None:
    seen: set[tuple[str, str, str]] = set()
    for manifest in manifests:
        meta = manifest.get("metadata", {})
        ident = (manifest["kind"], meta.get("namespace", ""), meta.get("name", ""))
        if ident in seen:
            raise KustomizeError(f"{directory}: {ident} defined twice")
        seen.add(ident)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: kustomize.py KUSTOMIZATION_DIR", file=sys.stderr)
        return 2
    print(yaml.safe_dump_all(build(Path(argv[0])), sort_keys=False), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
