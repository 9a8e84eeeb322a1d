{{/* Labels on every object of the release. */}}
{{- define "kubenexus.labels" -}}
app.kubernetes.io/part-of: kubenexus
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}
