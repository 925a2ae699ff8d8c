"""Kubernetes' RBAC authorizer, for the Kubernetes API test double: who may do what, decided
from the Roles, ClusterRoles and their bindings stored in the double, as kube-apiserver's
`--authorization-mode=RBAC` decides it (https://kubernetes.io/docs/reference/access-authn-authz/rbac/):

- a request is allowed when any rule of a role bound to the caller (by user name, group, or
  service account) matches its verb, API group, resource (with `/subresource`), namespace and
  name; there are no deny rules; `system:masters` may do anything;
- a RoleBinding grants its role's rules in its own namespace only; a ClusterRoleBinding everywhere;
- `resourceNames` match only requests that name one object (never create, list or watch
  of a collection);
- escalation prevention: creating or updating a Role or ClusterRole needs every one of its
  rules held already (or the `escalate` verb), and binding a role needs its rules held (or
  the `bind` verb on it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

MASTERS = "system:masters"
# What the API server's default bindings give every authenticated caller: discovery.
PUBLIC_PATHS = ("/api", "/apis", "/version", "/openapi", "/healthz", "/readyz", "/livez")


@dataclass(frozen=True)
class Identity:
    user: str
    groups: tuple[str, ...] = ()

    @classmethod
    def service_account(cls, namespace: str, name: str) -> Identity:
        return cls(
            f"system:serviceaccount:{namespace}:{name}",
            ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
        )


ADMIN = Identity("kubernetes-admin", (MASTERS, "system:authenticated"))


@dataclass(frozen=True)
class Request:
    """A resource request's attributes, as the authorizer sees them."""

    verb: str  # get list watch create update patch delete deletecollection (escalate, bind)
    group: str
    resource: str
    subresource: str | None = None
    namespace: str | None = None
    name: str | None = None

    def forbidden(self, identity: Identity, kind_hint: str = "") -> str:
        """The message kube-apiserver sends with a 403."""
        resource = f"{self.resource}/{self.subresource}" if self.subresource else self.resource
        qualified = f"{self.resource}.{self.group}" if self.group else self.resource
        subject = f'{qualified} "{self.name}"' if self.name else qualified
        where = f'in the namespace "{self.namespace}"' if self.namespace else "at the cluster scope"
        group = f'in API group "{self.group}"'
        return (
            f'{subject} is forbidden: User "{identity.user}" cannot {self.verb} resource "{resource}" {group} {where}'
        )


@dataclass
class Rbac:
    """The RBAC objects in force; `objects(kind)` lists the stored ones of a kind."""

    objects: Callable[[str], Iterable[dict[str, Any]]]
    extra_rules: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def allows(self, identity: Identity, request: Request) -> bool:
        if MASTERS in identity.groups:
            return True
        return any(_rule_matches(rule, request) for rule in self.rules_for(identity, request.namespace))

    def rules_for(self, identity: Identity, namespace: str | None) -> list[dict[str, Any]]:
        """Every rule that applies to the caller in `namespace` (None: cluster-scoped)."""
        cluster_roles = {r["metadata"]["name"]: r for r in self.objects("ClusterRole")}
        rules: list[dict[str, Any]] = []
        for binding in self.objects("ClusterRoleBinding"):
            if _binds(binding, identity):
                rules += (cluster_roles.get(binding["roleRef"]["name"]) or {}).get("rules") or []
        if namespace is None:
            return rules
        roles = {r["metadata"]["name"]: r for r in self.objects("Role") if r["metadata"].get("namespace") == namespace}
        for binding in self.objects("RoleBinding"):
            if binding["metadata"].get("namespace") != namespace or not _binds(binding, identity):
                continue
            ref = binding["roleRef"]
            role = (cluster_roles if ref["kind"] == "ClusterRole" else roles).get(ref["name"]) or {}
            rules += role.get("rules") or []
        return rules

    def escalation(self, identity: Identity, kind: str, obj: dict[str, Any]) -> str | None:
        """Why creating or updating this Role, ClusterRole or binding is an escalation, if it is."""
        if MASTERS in identity.groups:
            return None
        namespace = obj["metadata"].get("namespace") if kind in ("Role", "RoleBinding") else None
        plural = {"Role": "roles", "ClusterRole": "clusterroles"}
        if kind in ("Role", "ClusterRole"):
            if self.allows(identity, Request("escalate", "rbac.authorization.k8s.io", plural[kind], None, namespace)):
                return None
            rules = obj.get("rules") or []
        else:
            ref = obj.get("roleRef") or {}
            resource = plural.get(ref.get("kind", ""), "")
            if self.allows(
                identity, Request("bind", "rbac.authorization.k8s.io", resource, None, namespace, ref.get("name"))
            ):
                return None
            source = "ClusterRole" if ref.get("kind") == "ClusterRole" else "Role"
            role = next(
                (
                    r
                    for r in self.objects(source)
                    if r["metadata"]["name"] == ref.get("name")
                    and (source == "ClusterRole" or r["metadata"].get("namespace") == namespace)
                ),
                None,
            )
            if role is None:
                return f'{source.lower()}s.rbac.authorization.k8s.io "{ref.get("name")}" not found'
            rules = role.get("rules") or []
        held = self.rules_for(identity, namespace)
        missing = [r for r in _expand(rules) if not any(_covers(h, r) for h in held)]
        if not missing:
            return None
        name = obj["metadata"]["name"]
        return (
            f'{plural.get(kind, kind.lower() + "s")}.rbac.authorization.k8s.io "{name}" is forbidden: '
            f'user "{identity.user}" is attempting to grant RBAC permissions not currently held: '
            + "; ".join(_describe(r) for r in missing)
        )


def _binds(binding: dict[str, Any], identity: Identity) -> bool:
    for subject in binding.get("subjects") or []:
        kind = subject.get("kind")
        if kind == "User" and subject.get("name") == identity.user:
            return True
        if kind == "Group" and subject.get("name") in identity.groups:
            return True
        if kind == "ServiceAccount":
            namespace = subject.get("namespace") or binding["metadata"].get("namespace")
            if identity.user == f"system:serviceaccount:{namespace}:{subject.get('name')}":
                return True
    return False


def _rule_matches(rule: dict[str, Any], request: Request) -> bool:
    if "*" not in (rule.get("verbs") or []) and request.verb not in (rule.get("verbs") or []):
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and request.group not in groups:
        return False
    wanted = f"{request.resource}/{request.subresource}" if request.subresource else request.resource
    resources = rule.get("resources") or []
    if not ("*" in resources or wanted in resources or f"*/{request.subresource}" in resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or (request.name is not None and request.name in names)


def _expand(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One rule per (group, resource, verb, name): what escalation checks one by one."""
    out = []
    for rule in rules:
        for group in rule.get("apiGroups") or [""]:
            for resource in rule.get("resources") or []:
                for verb in rule.get("verbs") or []:
                    for name in rule.get("resourceNames") or [None]:
                        out.append({"group": group, "resource": resource, "verb": verb, "name": name})
    return out


def _covers(held: dict[str, Any], wanted: dict[str, Any]) -> bool:
    def has(values: list[str], value: str) -> bool:
        return "*" in values or value in values

    if not has(held.get("verbs") or [], wanted["verb"]) or not has(held.get("apiGroups") or [], wanted["group"]):
        return False
    if not has(held.get("resources") or [], wanted["resource"]):
        return False
    names = held.get("resourceNames") or []
    return not names or wanted["name"] in names


def _describe(rule: dict[str, Any]) -> str:
    names = f" ResourceNames:[{rule['name']}]" if rule["name"] else ""
    return (
        f"{{APIGroups:[{rule['group']!r}], Resources:[{rule['resource']!r}],{names} Verbs:[{rule['verb']!r}]}}"
    ).replace("'", '"')
