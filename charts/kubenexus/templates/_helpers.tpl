{{/* Labels on every object of the release. */}}
{{- define "kubenexus.labels" -}}
app.kubernetes.io/part-of: kubenexus
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The pod webhook's scope (config.namespaceSelector). Every pod of a selected
namespace is sent to the webhook; elsewhere only pods that name
config.schedulerName are. Neither ever includes kube-system or the release's
namespace: the webhook fails closed.
*/}}
{{/* kubenexus.scopeRequirements: the selector as requirements (JSON), matchLabels first. */}}
{{- define "kubenexus.scopeRequirements" -}}
{{- $sel := .Values.config.namespaceSelector | default dict -}}
{{- $reqs := list -}}
{{- range $key, $value := $sel.matchLabels -}}
{{- $reqs = append $reqs (dict "key" $key "operator" "In" "values" (list $value)) -}}
{{- end -}}
{{- range $sel.matchExpressions -}}
{{- $reqs = append $reqs . -}}
{{- end -}}
{{- toJson $reqs -}}
{{- end -}}

{{/* kubenexus.systemNamespaces: the requirement that keeps kube-system and the release namespace out (JSON). */}}
{{- define "kubenexus.systemNamespaces" -}}
{{- toJson (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" (list "kube-system" .Release.Namespace)) -}}
{{- end -}}

{{/* kubenexus.optedInScope: the selected namespaces (YAML). */}}
{{- define "kubenexus.optedInScope" -}}
{{- $reqs := include "kubenexus.scopeRequirements" . | fromJsonArray -}}
{{- toYaml (dict "matchExpressions" (append $reqs (include "kubenexus.systemNamespaces" . | fromJson))) -}}
{{- end -}}

{{/*
kubenexus.outsideScopes: every other namespace, as a JSON list of disjoint
selectors. A selector's complement is a union: term i holds where the first i
requirements hold and requirement i+1 does not, so a namespace matches exactly
one term, and none when the selector is empty (every namespace is selected).
*/}}
{{- define "kubenexus.outsideScopes" -}}
{{- $reqs := include "kubenexus.scopeRequirements" . | fromJsonArray -}}
{{- $system := include "kubenexus.systemNamespaces" . | fromJson -}}
{{- $negation := dict "In" "NotIn" "NotIn" "In" "Exists" "DoesNotExist" "DoesNotExist" "Exists" -}}
{{- $terms := list -}}
{{- range $i, $r := $reqs -}}
{{- $not := dict "key" $r.key "operator" (get $negation $r.operator) -}}
{{- with $r.values -}}
{{- $_ := set $not "values" . -}}
{{- end -}}
{{- $terms = append $terms (dict "matchExpressions" (concat (slice $reqs 0 $i) (list $not $system))) -}}
{{- end -}}
{{- toJson $terms -}}
{{- end -}}

{{/*
kubenexus.image: an image reference from an image value (repository, tag,
digest) and the release's imageRegistry. imageRegistry replaces the repository's
registry (its first path element when that holds a "." or ":" or is "localhost",
as container runtimes read it) or, for a repository without one, is put in front.
A digest pins the image and the tag is left out; otherwise the tag defaults to the
chart's appVersion.
*/}}
{{- define "kubenexus.image" -}}
{{- $repo := .image.repository -}}
{{- with .root.Values.imageRegistry -}}
{{- $parts := splitList "/" $repo -}}
{{- $first := first $parts -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $repo = join "/" (rest $parts) -}}
{{- end -}}
{{- $repo = printf "%s/%s" (trimSuffix "/" .) $repo -}}
{{- end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $repo .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (.image.tag | default .root.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/*
The manager pods' affinity: the values' manager.affinity, and, with more than one
replica and no pod anti-affinity given, a preference for different nodes, so that a
node's loss does not take every webhook server at once.
*/}}
{{- define "kubenexus.managerAffinity" -}}
{{- $affinity := deepCopy (.Values.manager.affinity | default dict) -}}
{{- if and (gt (int .Values.manager.replicas) 1) (not (hasKey $affinity "podAntiAffinity")) -}}
{{- $term := dict "weight" 100 "podAffinityTerm" (dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (dict "app.kubernetes.io/component" "manager" "app.kubernetes.io/name" "kubenexus"))) -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list $term)) -}}
{{- end -}}
{{- toYaml $affinity -}}
{{- end -}}
