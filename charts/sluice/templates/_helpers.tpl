{{- define "sluice.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sluice.labels" -}}
app.kubernetes.io/name: sluice-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: sluice-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sluice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "sluice.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* What the operator may do. It may grant the driver only what it holds itself (RBAC
forbids escalation), so it holds the driver's rules too. */}}
{{- define "sluice.rules" -}}
- apiGroups: [sluice.io]
  resources: [cdcpipelines]
  verbs: [get, list, watch, patch]
- apiGroups: [sluice.io]
  resources: [cdcpipelines/status]
  verbs: [get, patch, update]
# Owner references with blockOwnerDeletion (so that a foreground deletion of a CdcPipeline
# waits for its SparkApplication) need this where OwnerReferencesPermissionEnforcement is on.
- apiGroups: [sluice.io]
  resources: [cdcpipelines/finalizers]
  verbs: [update]
- apiGroups: [sparkoperator.k8s.io]
  resources: [sparkapplications]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [serviceaccounts]
  verbs: [get, create, update, patch, delete]
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch, delete, deletecollection]
- apiGroups: [""]
  resources: [secrets]
  verbs: [get]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [""]
  resources: [pods, services, persistentvolumeclaims]
  verbs: [create, get, list, watch, delete, deletecollection]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [roles, rolebindings]
  verbs: [get, create, update, patch, delete]
{{- end -}}
