"""A TEST DOUBLE of the Kubernetes API server, built on KMock's KubernetesEmulator.

KMock serves discovery, watch streams and a JSON object store over real HTTP. On top of
it this double keeps the API's semantics that the operator, the driver and kubectl rely on
(each checked against the documented behaviour in tests/harness/test_kube_api_double.py):

- resourceVersion bumped on every write; a stale one in an update or patch is 409 Conflict;
- metadata.generation bumped when anything but metadata and status changes;
- the status subresource: writes to the object ignore status, writes to /status take only status;
- namespace from the URL, uid and creationTimestamp set on create, AlreadyExists on a second create;
- PUT (replace), JSON merge patch, JSON patch; strategic merge patch as a merge patch (lists replaced);
- label and field selectors on list and watch, and `kind` on lists; kubectl's Table form from a CRD's
  additionalPrinterColumns;
- finalizers and deletionTimestamp, and cascade deletion by ownerReferences (the garbage collector,
  done at once);
- CRDs: creating one serves its resource; every create and update of its objects is validated against
  the openAPIV3Schema (unknown fields pruned, defaults applied) and its x-kubernetes-validations rules,
  transition rules with oldSelf included (422 Invalid naming the field).

- authentication by bearer token and RBAC authorization of every request by the caller's identity
  (tests/harness/rbac_authorizer.py): the admin token, or a ServiceAccount's token (valid while
  that ServiceAccount exists); a denial is the API server's 403 Forbidden Status;
- admission in the API server's order: mutating webhooks, the schema, validating webhooks (a test
  double of a webhook registers itself in `webhooks`; its denial is the 403 the API server
  relays), and, where a test turns it on, the OwnerReferencesPermissionEnforcement plugin.

Not a Kubernetes: no field managers (server-side apply is refused), and built-in kinds
(ConfigMap, Secret, ...) are stored unvalidated.
"""

from __future__ import annotations

import asyncio
import copy
import re
import ssl
import subprocess
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import aiohttp.test_utils
import aiohttp.web
import attrs
import kmock
import yaml
from kmock._internal import enums, parsing, rendering

from tests.harness.crd_validation import violations
from tests.harness.rbac_authorizer import ADMIN, Identity, Rbac
from tests.harness.rbac_authorizer import Request as Access

_parse_path = parsing.parse_path


def _parse_namespaces_too(path: str) -> parsing.ParsedPath:
    """KMock reads `/api/v1/namespaces[/NAME]` as a namespace prefix with nothing after it (and
    fails on the list): they are the cluster-scoped `namespaces` resource itself."""
    parts = path.strip("/").split("/")
    if parts[:3] == ["api", "v1", "namespaces"] and len(parts) <= 5 and (len(parts) < 5 or parts[4] in ("status",)):
        name = parts[3] if len(parts) > 3 else None
        return parsing.ParsedPath("", "v1", "namespaces", None, name, parts[4] if len(parts) > 4 else None)
    return _parse_path(path)


parsing.parse_path = _parse_namespaces_too

CORE_RESOURCES: dict[str, tuple[str, bool]] = {  # "group/version/plural" -> (kind, namespaced)
    "v1/namespaces": ("Namespace", False),
    "v1/events": ("Event", True),
    "v1/configmaps": ("ConfigMap", True),
    "v1/secrets": ("Secret", True),
    "v1/serviceaccounts": ("ServiceAccount", True),
    "v1/pods": ("Pod", True),
    "v1/services": ("Service", True),
    "events.k8s.io/v1/events": ("Event", True),
    "rbac.authorization.k8s.io/v1/roles": ("Role", True),
    "rbac.authorization.k8s.io/v1/rolebindings": ("RoleBinding", True),
    "rbac.authorization.k8s.io/v1/clusterroles": ("ClusterRole", False),
    "rbac.authorization.k8s.io/v1/clusterrolebindings": ("ClusterRoleBinding", False),
    "coordination.k8s.io/v1/leases": ("Lease", True),
    "apiextensions.k8s.io/v1/customresourcedefinitions": ("CustomResourceDefinition", False),
}
VERBS = ["get", "list", "watch", "create", "patch", "update", "delete"]
ADMIN_TOKEN = "test-double"  # the cluster admin's (system:masters): kubectl, fixtures, the Spark Operator double
SERVICE_ACCOUNT_TOKEN = "serviceaccount:{namespace}:{name}"  # what a pod of that ServiceAccount presents


@dataclass
class _Kind:
    kind: str
    namespaced: bool
    api_version: str
    schema: dict[str, Any] | None = None  # a CRD version's openAPIV3Schema
    status_subresource: bool = False
    printer_columns: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Admission:
    """What an admission webhook is shown: the operation, the object as it would be stored,
    the stored one (updates), and who asks."""

    operation: str  # CREATE or UPDATE
    kind: str
    obj: dict[str, Any]
    old: dict[str, Any] | None
    caller: Identity


@dataclass
class Webhook:
    """An admission webhook as registered with the API server: `admit` returns the object
    (mutated or not) or raises ApiError to deny."""

    name: str  # e.g. validate-sparkapplication.sparkoperator.k8s.io
    kind: str  # the kind it is registered for
    mutating: bool
    admit: Any  # Callable[[Admission], dict[str, Any]]


class ApiError(Exception):
    """An API Status error: code, reason (NotFound, Conflict, Invalid...) and message."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


@attrs.define(kw_only=True)
class KubernetesApiDouble(kmock.KubernetesEmulator):
    _kinds: dict[kmock.resource, _Kind] = attrs.field(factory=dict, init=False)
    _version: int = attrs.field(default=1, init=False)
    writes: list[dict[str, Any]] = attrs.field(factory=list, init=False)  # every change: who wrote what
    webhooks: list[Webhook] = attrs.field(factory=list, init=False)
    enforce_owner_references: bool = attrs.field(default=False, init=False)  # the admission plugin
    denials: list[str] = attrs.field(factory=list, init=False)  # every 403, for tests to show
    _caller: Identity = attrs.field(default=ADMIN, init=False)
    _rbac: Rbac = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        for path, (kind, namespaced) in CORE_RESOURCES.items():
            self._serve_kind(path, _Kind(kind, namespaced, path.rsplit("/", 1)[0]))
        self._rbac = Rbac(self._stored)

    def _stored(self, kind: str) -> list[dict[str, Any]]:
        return [
            obj.raw
            for (resource, _, _), obj in self._objects.items()
            if not obj.deleted and self._kinds[resource].kind == kind
        ]

    # -- resources -------------------------------------------------------------------------

    def _serve_kind(self, path: str, kind: _Kind, short_names: tuple[str, ...] = (), plural: str = "") -> None:
        resource = kmock.resource(path)
        self._kinds[resource] = kind
        info = self.resources[resource]
        info.kind, info.namespaced, info.verbs = kind.kind, kind.namespaced, set(VERBS)
        info.singular = kind.kind.lower()
        info.shortnames = set(short_names)
        info.subresources = {"status"} if kind.status_subresource else set()

    def _serve_crd(self, crd: dict[str, Any]) -> None:
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", True):
                continue
            path = f"{spec['group']}/{version['name']}/{spec['names']['plural']}"
            self._serve_kind(
                path,
                _Kind(
                    spec["names"]["kind"],
                    spec.get("scope", "Namespaced") == "Namespaced",
                    f"{spec['group']}/{version['name']}",
                    version.get("schema", {}).get("openAPIV3Schema"),
                    "status" in (version.get("subresources") or {}),
                    version.get("additionalPrinterColumns", []),
                ),
                tuple(spec["names"].get("shortNames", [])),
            )

    # -- requests --------------------------------------------------------------------------

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        resource = request.resource
        try:
            caller = self._authenticate(request)
            if resource is not None and resource in self._kinds:
                self._authorize(caller, request, resource)
        except ApiError as exc:
            return aiohttp.web.json_response(_status(exc.code, exc.reason, exc.message), status=exc.code)
        if resource is None or request.action == enums.action.WATCH or resource not in self._kinds:
            return await kmock.RawHandler._handle(self, request)  # discovery, watch streams, 404s
        try:
            async with self._lock:
                self._caller = caller
                code, body, events = self._serve(request, resource)
                if events:
                    self.writes.append(
                        {
                            "method": request.method.value.upper(),
                            "kind": self._kinds[resource].kind,
                            "namespace": request.namespace,
                            "name": request.name or (body.get("metadata") or {}).get("name"),
                            "subresource": request.subresource,
                            "agent": request.headers.get("User-Agent", ""),
                        }
                    )
                for event in events:
                    await self._buses[event.pop("resource")].put(event)
        except ApiError as exc:
            code, body = exc.code, _status(exc.code, exc.reason, exc.message)
        return aiohttp.web.json_response(body, status=code)

    def _authenticate(self, request: rendering.Request) -> Identity:
        header = request.headers.get("Authorization") or ""
        token = header[len("Bearer ") :] if header.startswith("Bearer ") else ""
        if token == ADMIN_TOKEN:
            return ADMIN
        if token.startswith("serviceaccount:"):
            _, namespace, name = token.split(":", 2)
            account = (kmock.resource("v1/serviceaccounts"), namespace, name)
            if account in self._objects and not self._objects[account].deleted:
                return Identity.service_account(namespace, name)
        raise ApiError(401, "Unauthorized", "Unauthorized")

    def _authorize(self, caller: Identity, request: rendering.Request, resource: kmock.resource) -> None:
        method = request.method.value.upper() if request.method else "GET"
        watching = request.action == enums.action.WATCH or (request.params or {}).get("watch") in ("true", "1")
        if method == "GET":
            verb = "watch" if watching else ("get" if request.name else "list")
        else:
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, "")
            verb = verb or ("delete" if request.name else "deletecollection")
        access = Access(verb, resource.group, resource.plural, request.subresource, request.namespace, request.name)
        if not self._rbac.allows(caller, access):
            self._deny(access.forbidden(caller))

    def _serve(self, request: rendering.Request, resource: kmock.resource) -> tuple[int, Any, list[dict[str, Any]]]:
        kind = self._kinds[resource]
        method = request.method.value.upper() if request.method else ""
        if request.name is None:
            if method == "GET":
                return 200, self._list(request, resource, kind), []
            if method == "POST":
                return self._create(request, resource, kind)
            raise ApiError(405, "MethodNotAllowed", f"{method} is not supported on a collection")
        key = (resource, request.namespace, request.name)
        if method == "GET":
            obj = self._current(key, kind)
            if "as=Table" in (request.headers.get("Accept") or ""):
                return 200, _table(kind, [obj], obj["metadata"]["resourceVersion"]), []
            return 200, obj, []
        if method in ("PUT", "PATCH"):
            return self._update(request, resource, kind, key, method)
        if method == "DELETE":
            return self._delete(resource, kind, key, request.data or {})
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported")

    def _current(self, key: tuple[Any, ...], kind: _Kind) -> dict[str, Any]:
        if key not in self._objects or self._objects[key].deleted:
            raise ApiError(404, "NotFound", f'{kind.kind.lower()}s "{key[2]}" not found')
        return copy.deepcopy(self._objects[key].raw)

    def _list(self, request: rendering.Request, resource: kmock.resource, kind: _Kind) -> dict[str, Any]:
        items = [
            copy.deepcopy(obj.raw)
            for (res, namespace, _), obj in self._objects.items()
            if res == resource and not obj.deleted and request.namespace in (None, namespace)
        ]
        items = [o for o in items if _selected(o, request.params)]
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        if "as=Table" in (request.headers.get("Accept") or ""):
            return _table(kind, items, str(self._version))
        return {
            "apiVersion": kind.api_version,
            "kind": f"{kind.kind}List",
            "metadata": {"resourceVersion": str(self._version)},
            "items": items,
        }

    def _create(
        self, request: rendering.Request, resource: kmock.resource, kind: _Kind
    ) -> tuple[int, Any, list[dict[str, Any]]]:
        obj = copy.deepcopy(request.data)
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "the body is not a JSON object")
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        if not meta.get("name"):
            raise ApiError(422, "Invalid", f"{kind.kind} is invalid: metadata.name: Required value")
        if kind.namespaced:
            if meta.get("namespace") not in (None, request.namespace):
                raise ApiError(
                    400, "BadRequest", "the namespace of the provided object does not match the namespace sent"
                )
            meta["namespace"] = request.namespace
        else:
            meta.pop("namespace", None)
        key = (resource, meta.get("namespace"), meta["name"])
        if key in self._objects and not self._objects[key].deleted:
            raise ApiError(409, "AlreadyExists", f'{kind.kind.lower()}s "{meta["name"]}" already exists')
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        if kind.status_subresource:
            obj.pop("status", None)  # status is written through /status only
        for server_set in ("resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "generation"):
            meta.pop(server_set, None)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=_now(), generation=1)
        obj = self._admit(kind, obj, None)
        self._objects[key] = self._stamp(obj)
        if kind.kind == "CustomResourceDefinition":
            self._serve_crd(obj)
        return 201, copy.deepcopy(obj), [{"resource": resource, "type": "ADDED", "object": copy.deepcopy(obj)}]

    def _update(
        self, request: rendering.Request, resource: kmock.resource, kind: _Kind, key: tuple[Any, ...], method: str
    ) -> tuple[int, Any, list[dict[str, Any]]]:
        old = self._current(key, kind)
        status_only = request.subresource == "status"
        if request.subresource not in (None, "status") or (status_only and not kind.status_subresource):
            raise ApiError(404, "NotFound", f"{kind.kind} has no subresource {request.subresource}")
        body = request.data
        if method == "PUT":
            new = copy.deepcopy(body)
            precondition = (body.get("metadata") or {}).get("resourceVersion") if isinstance(body, dict) else None
            if not precondition:
                raise ApiError(
                    422, "Invalid", f"{kind.kind} is invalid: metadata.resourceVersion: must be specified for an update"
                )
        else:
            new, precondition = _patched(old, body, request.headers.get("Content-Type", ""))
        if precondition and precondition != old["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {kind.kind.lower()}s "{key[2]}": the object has been modified; '
                "please apply your changes to the latest version and try again",
            )
        if kind.status_subresource:
            if status_only:
                new = {**old, "status": new.get("status")}
                if new["status"] is None:
                    new.pop("status")
            elif "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        meta = new.setdefault("metadata", {})
        for server_set in ("uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp"):
            if server_set in old["metadata"]:
                meta[server_set] = old["metadata"][server_set]
            else:
                meta.pop(server_set, None)
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        if _without(new, "metadata", "status") != _without(old, "metadata", "status"):
            meta["generation"] = old["metadata"].get("generation", 1) + 1
        new = self._admit(kind, new, old, status_only)
        if new == {**old, "metadata": {**old["metadata"], "resourceVersion": new["metadata"].get("resourceVersion")}}:
            return 200, old, []  # a no-op write keeps the resourceVersion, as the API does
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._remove(resource, kind, key)
        self._objects[key].create(self._stamp(new))
        if kind.kind == "CustomResourceDefinition":
            self._serve_crd(new)
        return 200, copy.deepcopy(new), [{"resource": resource, "type": "MODIFIED", "object": copy.deepcopy(new)}]

    def _delete(
        self, resource: kmock.resource, kind: _Kind, key: tuple[Any, ...], options: dict[str, Any]
    ) -> tuple[int, Any, list[dict[str, Any]]]:
        obj = self._current(key, kind)
        if obj["metadata"].get("finalizers"):
            if not obj["metadata"].get("deletionTimestamp"):
                obj["metadata"]["deletionTimestamp"] = _now()
                self._objects[key].create(self._stamp(obj))
                return 200, obj, [{"resource": resource, "type": "MODIFIED", "object": copy.deepcopy(obj)}]
            return 200, obj, []
        return self._remove(resource, kind, key, options.get("propagationPolicy") != "Orphan")

    def _remove(
        self, resource: kmock.resource, kind: _Kind, key: tuple[Any, ...], cascade: bool = True
    ) -> tuple[int, Any, list[dict[str, Any]]]:
        obj = copy.deepcopy(self._objects[key].raw)
        self._objects[key].delete()
        events = [{"resource": resource, "type": "DELETED", "object": obj}]
        if cascade:
            events += self._collect_dependents(obj["metadata"]["uid"])
        return 200, obj, events

    def _collect_dependents(self, owner_uid: str) -> list[dict[str, Any]]:
        """The garbage collector's background propagation, done at once: dependents first
        lose their owner reference; those left with no owner are deleted, and so on down."""
        events: list[dict[str, Any]] = []
        for key, stored in list(self._objects.items()):
            if stored.deleted:
                continue
            refs = stored.raw["metadata"].get("ownerReferences") or []
            if not any(r.get("uid") == owner_uid for r in refs):
                continue
            remaining = [r for r in refs if r.get("uid") != owner_uid]
            if remaining:
                obj = copy.deepcopy(stored.raw)
                obj["metadata"]["ownerReferences"] = remaining
                stored.create(self._stamp(obj))
                events.append({"resource": key[0], "type": "MODIFIED", "object": copy.deepcopy(obj)})
            else:
                events += self._remove(key[0], self._kinds[key[0]], key)[2]
        return events

    def _admit(
        self, kind: _Kind, obj: dict[str, Any], old: dict[str, Any] | None, status_only: bool = False
    ) -> dict[str, Any]:
        """Admission as the API server runs it: mutating webhooks, the CRD's pruning,
        defaulting and validation, then validating webhooks and the built-in plugins.
        Webhooks are registered for the resource, not its status subresource."""
        operation = "CREATE" if old is None else "UPDATE"
        hooks = [] if status_only else [h for h in self.webhooks if h.kind == kind.kind]
        for hook in (h for h in hooks if h.mutating):
            obj = self._call_webhook(hook, Admission(operation, kind.kind, obj, old, self._caller))
        if kind.schema is not None:
            obj = _pruned(obj, kind.schema, top=True)
            _default(obj, kind.schema)
            problems = (
                violations(kind.schema, obj, old, True) if old is not None else violations(kind.schema, obj, paths=True)
            )
            if problems:
                name = obj["metadata"]["name"]
                raise ApiError(422, "Invalid", f'{kind.kind} "{name}" is invalid: ' + "; ".join(problems))
        for hook in (h for h in hooks if not h.mutating):
            self._call_webhook(hook, Admission(operation, kind.kind, obj, old, self._caller))
        if kind.kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"):
            refused = self._rbac.escalation(self._caller, kind.kind, obj)
            if refused:
                self._deny(refused)
        if self.enforce_owner_references:
            self._owner_references_permitted(kind, obj, old)
        return obj

    def _call_webhook(self, hook: Webhook, review: Admission) -> dict[str, Any]:
        try:
            return hook.admit(review) or review.obj
        except ApiError as exc:
            message = f'admission webhook "{hook.name}" denied the request: {exc.message}'
            self.denials.append(message)
            raise ApiError(exc.code, exc.reason, message) from exc

    def _owner_references_permitted(self, kind: _Kind, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """The OwnerReferencesPermissionEnforcement admission plugin (OpenShift turns it on),
        as kubernetes/plugin/pkg/admission/gc does it: changing an existing object's owner
        references needs `delete` on it, and a new blockOwnerDeletion needs `update` on the
        owner's `finalizers` subresource. RBAC gives no reason for a denial, hence the blank."""
        refs = obj["metadata"].get("ownerReferences") or []
        old_refs = ((old or {}).get("metadata") or {}).get("ownerReferences") or []
        if refs == old_refs:
            return
        meta = obj["metadata"]
        resource = next(r for r, k in self._kinds.items() if k is kind)
        qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
        prefix = f'{qualified} "{meta["name"]}" is forbidden: '
        if old is not None:
            access = Access("delete", resource.group, resource.plural, None, meta.get("namespace"), meta["name"])
            if not self._rbac.allows(self._caller, access):
                self._deny(prefix + "cannot set an ownerRef on a resource you can't delete: , <nil>")
        blocking_before = {r.get("uid") for r in old_refs if r.get("blockOwnerDeletion")}
        for ref in refs:
            if not ref.get("blockOwnerDeletion") or ref.get("uid") in blocking_before:
                continue
            owner = next(
                (
                    r
                    for r, k in self._kinds.items()
                    if k.kind == ref.get("kind") and k.api_version == ref.get("apiVersion")
                ),
                None,
            )
            if owner is None:
                self._deny(
                    prefix + "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for "
                    f"APIVersion {ref.get('apiVersion')} Kind {ref.get('kind')}"
                )
            namespace = meta.get("namespace") if self._kinds[owner].namespaced else None
            access = Access("update", owner.group, owner.plural, "finalizers", namespace, ref.get("name"))
            if not self._rbac.allows(self._caller, access):
                self._deny(
                    prefix + "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't "
                    "set finalizers on: , <nil>"
                )

    def _deny(self, message: str) -> None:
        self.denials.append(message)
        raise ApiError(403, "Forbidden", message)

    def _stamp(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._version += 1
        obj["metadata"]["resourceVersion"] = str(self._version)
        return obj

    async def _serve_version(self, request: rendering.Request) -> rendering.Payload:
        """KMock's discovery, with subresources as the API lists them: no short names, and
        only the verbs a subresource has (kubectl otherwise warns that `cdcp` is ambiguous)."""
        listing = await super()._serve_version(request)
        listing["groupVersion"] = listing.get("groupVersion", "").lstrip("/")  # the core group is "v1"
        for entry in listing["resources"]:
            if "/" in entry["name"]:
                entry.update(shortNames=[], categories=[], verbs=["get", "patch", "update"])
        return listing

    async def _serve_watch(self, request: rendering.Request) -> AsyncIterator[rendering.Payload]:
        async for event in super()._serve_watch(request):
            if not isinstance(event, dict) or _selected(event["object"], request.params):
                yield event

    # -- for tests -------------------------------------------------------------------------

    def object(self, path: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        key = (kmock.resource(path), namespace, name)
        return None if key not in self._objects or self._objects[key].deleted else copy.deepcopy(self._objects[key].raw)


# -- patches, selectors, schemas ----------------------------------------------------------


def _patched(old: dict[str, Any], body: Any, content_type: str) -> tuple[dict[str, Any], str | None]:
    """The object after a patch, and the resourceVersion precondition the patch carried."""
    if "json-patch" in content_type:
        new = copy.deepcopy(old)
        for op in body:
            new = _json_patch_op(new, op)
        return new, None
    if "apply-patch" in content_type:
        raise ApiError(415, "UnsupportedMediaType", "server-side apply is not supported by this test double")
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "a merge patch must be a JSON object")
    precondition = (body.get("metadata") or {}).get("resourceVersion")
    return _merge(old, body), precondition


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def _json_patch_op(doc: Any, op: dict[str, Any]) -> Any:
    """RFC 6902, the operations kubectl and clients send."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
    parent = doc
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    last = parts[-1] if parts else None
    kind = op["op"]
    try:
        if kind == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if current != op.get("value"):
                raise ApiError(422, "Invalid", f"the test of {op['path']} failed")
        elif kind in ("add", "replace"):
            if isinstance(parent, list):
                index = len(parent) if last == "-" else int(last)
                if kind == "add":
                    parent.insert(index, op["value"])
                else:
                    parent[index] = op["value"]
            else:
                if kind == "replace" and last not in parent:
                    raise ApiError(422, "Invalid", f"the path {op['path']} does not exist")
                parent[last] = op["value"]
        elif kind == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        else:
            raise ApiError(400, "BadRequest", f"JSON patch operation {kind} is not supported by this test double")
    except (KeyError, IndexError, TypeError) as exc:
        raise ApiError(422, "Invalid", f"the path {op['path']} does not exist") from exc
    return doc


def _selected(obj: dict[str, Any], params: Any) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    for term in _terms((params or {}).get("labelSelector", "")):
        if not _label_term(term, labels):
            return False
    for term in _terms((params or {}).get("fieldSelector", "")):
        negate = "!=" in term
        path, value = re.split(r"!=|==|=", term, maxsplit=1)
        actual: Any = obj
        for part in path.split("."):
            actual = actual.get(part) if isinstance(actual, dict) else None
        if (str(actual if actual is not None else "") == value) == negate:
            return False
    return True


def _terms(selector: str) -> Iterator[str]:
    """Comma-separated terms, keeping the commas inside `in (a,b)` sets."""
    depth, term = 0, ""
    for char in selector:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            yield term.strip()
            term = ""
        else:
            term += char
    if term.strip():
        yield term.strip()


def _label_term(term: str, labels: dict[str, str]) -> bool:
    match = re.fullmatch(r"(\S+)\s+(in|notin)\s+\((.*)\)", term)
    if match:
        key, operator, values = match.group(1), match.group(2), {v.strip() for v in match.group(3).split(",")}
        return (labels.get(key) in values) if operator == "in" else (labels.get(key) not in values)
    if term.startswith("!"):
        return term[1:] not in labels
    if "!=" in term:
        key, value = term.split("!=", 1)
        return labels.get(key) != value
    if "=" in term:
        key, value = re.split("==|=", term, maxsplit=1)
        return labels.get(key) == value
    return term in labels


def _without(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


def _pruned(value: Any, schema: dict[str, Any], top: bool = False) -> Any:
    """Drops fields the structural schema does not name (as the API server prunes them)."""
    if isinstance(value, dict) and schema.get("type") == "object":
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return value
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        result = {}
        for key, child in value.items():
            if top and key in ("apiVersion", "kind", "metadata"):
                result[key] = child
            elif key in properties:
                result[key] = _pruned(child, properties[key])
            elif isinstance(additional, dict):
                result[key] = _pruned(child, additional)
            elif additional is True:
                result[key] = child
        return result
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_pruned(item, schema["items"]) for item in value]
    return value


def _default(value: Any, schema: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, child in (schema.get("properties") or {}).items():
            if key not in value and "default" in child:
                value[key] = copy.deepcopy(child["default"])
            if key in value:
                _default(value[key], child)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])


def _table(kind: _Kind, items: list[dict[str, Any]], version: str) -> dict[str, Any]:
    """The Table kubectl asks for: Name, then the CRD's printer columns."""
    columns = [{"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}]
    columns += [
        {
            "name": c["name"],
            "type": c.get("type", "string"),
            "format": "",
            "description": "",
            "priority": c.get("priority", 0),  # above 0: kubectl shows it with -o wide
        }
        for c in kind.printer_columns
    ]
    rows = []
    for obj in items:
        cells: list[Any] = [obj["metadata"]["name"]]
        for column in kind.printer_columns:
            value = _json_path(obj, column["jsonPath"])
            cells.append(_age(value) if column.get("type") == "date" and value else value)
        meta = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj["metadata"]}
        rows.append({"cells": cells, "object": meta})
    return {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "Table",
        "metadata": {"resourceVersion": version},
        "columnDefinitions": columns,
        "rows": rows,
    }


def _json_path(obj: Any, path: str) -> Any:
    """The JSONPath subset printer columns use: .a.b and .a[?(@.k=="v")].b."""
    for step in re.findall(r"\.([^.\[]+)|\[\?\(@\.(\w+)==\"([^\"]*)\"\)\]", path):
        name, filter_key, filter_value = step
        if name:
            obj = obj.get(name) if isinstance(obj, dict) else None
        else:
            obj = next((i for i in obj or [] if isinstance(i, dict) and i.get(filter_key) == filter_value), None)
        if obj is None:
            return None
    return obj


def _age(stamp: str) -> str:
    seconds = int((datetime.now(timezone.utc) - datetime.fromisoformat(stamp.replace("Z", "+00:00"))).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- running it ---------------------------------------------------------------------------


class RunningApiDouble:
    """The double served over HTTPS on a local port from a thread of its own (client-go sends
    bearer tokens over TLS only), with a kubeconfig for clients that trusts its certificate."""

    def __init__(self, directory: Path) -> None:
        self.double = KubernetesApiDouble()
        self.directory = directory
        self.kubeconfig = directory / "kubeconfig"
        self.certificate = _self_signed_certificate(directory)
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._serve, name="kube-api-double", daemon=True)
        self.url = ""

    def start(self) -> RunningApiDouble:
        self._thread.start()
        if not self._started.wait(30):
            raise RuntimeError("the Kubernetes API test double did not start")
        self.kubeconfig.write_text(yaml.safe_dump(kubeconfig(self.url, self.certificate)))
        return self

    def client(self, kubeconfig: Path | None = None) -> Any:
        """A kubernetes ApiClient configured from a kubeconfig (the admin's unless given), as a user's would be."""
        from kubernetes import config

        return config.new_client_from_config(str(kubeconfig or self.kubeconfig))

    def service_account_kubeconfig(self, namespace: str, name: str, directory: Path) -> Path:
        """A kubeconfig with the token a pod of ServiceAccount namespace/name presents."""
        token = SERVICE_ACCOUNT_TOKEN.format(namespace=namespace, name=name)
        path = directory / f"kubeconfig-{namespace}-{name}"
        path.write_text(yaml.safe_dump(kubeconfig(self.url, self.certificate, token, namespace)))
        return path

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def apply_file(self, path: Path) -> None:
        """Creates the objects in a YAML file (CRDs, for instance), as `kubectl create -f` does."""
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                self.create(document)

    def create(self, obj: dict[str, Any], exist_ok: bool = False) -> None:
        """Creates one object as the cluster admin."""
        self.call(self._create_directly(obj, exist_ok))

    def call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(30)

    async def _create_directly(self, obj: dict[str, Any], exist_ok: bool = False) -> None:
        api_version, plural = obj["apiVersion"], _plural(obj["kind"])
        namespace = obj.get("metadata", {}).get("namespace")
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        url = f"{base}/namespaces/{namespace}/{plural}" if namespace else f"{base}/{plural}"
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        async with self.double.post(url, json=obj, headers=headers, ssl=False) as response:
            if response.status >= 300 and not (exist_ok and response.status == 409):
                raise RuntimeError(f"create {obj['kind']} {obj['metadata']['name']}: {await response.text()}")

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.certificate, self.certificate.with_suffix(".key"))

        class TlsServer(aiohttp.test_utils.RawTestServer):
            async def start_server(self, loop: Any = None, **kwargs: Any) -> None:
                await super().start_server(loop=loop, ssl=context, **kwargs)

        async with self.double, kmock.Server(self.double, server_cls=TlsServer) as server:
            self.url = str(server.url).rstrip("/")
            self._started.set()
            await self._stop.wait()


def _plural(kind: str) -> str:
    lower = kind.lower()
    return lower + ("es" if lower.endswith("s") else "s")


def _self_signed_certificate(directory: Path) -> Path:
    """A certificate for 127.0.0.1 (and its key beside it), made with openssl."""
    certificate = directory / "apiserver.crt"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=kube-api-double"]
        + ["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
        + ["-keyout", str(certificate.with_suffix(".key")), "-out", str(certificate)],
        check=True,
        capture_output=True,
    )
    return certificate


def kubeconfig(url: str, certificate: Path, token: str = ADMIN_TOKEN, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "double", "cluster": {"server": url, "certificate-authority": str(certificate)}}],
        "users": [{"name": "tester", "user": {"token": token}}],
        "contexts": [{"name": "double", "context": {"cluster": "double", "user": "tester", "namespace": namespace}}],
        "current-context": "double",
    }


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]
