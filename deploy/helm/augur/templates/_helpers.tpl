{{/* Names */}}
{{- define "augur.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "augur.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Names of the objects the chart makes (suffixes keep them under 63 characters). */}}
{{- define "augur.child" -}}
{{- printf "%s-%s" (include "augur.fullname" .ctx | trunc (int (sub 62 (len .suffix))) | trimSuffix "-") .suffix -}}
{{- end -}}

{{- define "augur.secretName" -}}
{{- if .Values.secret.create -}}{{ include "augur.fullname" . }}{{- else -}}{{ .Values.secret.existingSecret }}{{- end -}}
{{- end -}}

{{- define "augur.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "augur.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{/* Labels */}}
{{- define "augur.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "augur.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: augur
{{- end -}}

{{- define "augur.selectorLabels" -}}
app.kubernetes.io/name: {{ include "augur.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: proxy
{{- end -}}

{{- define "augur.redisSelectorLabels" -}}
app.kubernetes.io/name: {{ include "augur.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: limit-store
{{- end -}}

{{/*
The environment variable holding API key `id`: AUGUR_API_KEY_ and the id in
capitals, each `.`, `@` and `-` as `_`.
*/}}
{{- define "augur.keyEnv" -}}
{{- printf "AUGUR_API_KEY_%s" (. | upper | replace "." "_" | replace "@" "_" | replace "-" "_") -}}
{{- end -}}

{{/*
The API keys read from the Secret (those without sha256), checked: each id
valid and each variable name distinct. A JSON list of {id, env, value}.
*/}}
{{- define "augur.envKeys" -}}
{{- $out := list -}}
{{- $seen := dict -}}
{{- range $i, $k := .Values.auth.keys -}}
{{- if not (kindIs "map" $k) -}}{{- fail (printf "auth.keys[%d] must be a map with an id" $i) -}}{{- end -}}
{{- $id := toString (default "" $k.id) -}}
{{- if not (regexMatch "^[A-Za-z0-9_.@-]{1,64}$" $id) -}}
{{- fail (printf "auth.keys[%d].id %q: 1-64 of A-Z a-z 0-9 _ . @ -" $i $id) -}}
{{- end -}}
{{- if and $k.sha256 $k.value -}}
{{- fail (printf "auth.keys %q: give sha256 or value, not both" $id) -}}
{{- end -}}
{{- if $k.sha256 -}}
{{- if not (regexMatch "^[0-9a-fA-F]{64}$" (toString $k.sha256)) -}}
{{- fail (printf "auth.keys %q: sha256 must be 64 hex digits" $id) -}}
{{- end -}}
{{- else -}}
{{- $env := include "augur.keyEnv" $id -}}
{{- if hasKey $seen $env -}}
{{- fail (printf "auth.keys %q and %q both read %s: give them ids that differ in more than . @ - _ or case" (get $seen $env) $id $env) -}}
{{- end -}}
{{- $_ := set $seen $env $id -}}
{{- $out = append $out (dict "id" $id "env" $env "value" (toString (default "" $k.value))) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
A value of the Secret: the one given, else the one the release's Secret
already holds (upgrades keep generated values), else a random one.
*/}}
{{- define "augur.secretValue" -}}
{{- if .given -}}
{{- .given -}}
{{- else -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace (include "augur.fullname" .root) -}}
{{- if and $existing $existing.data (hasKey $existing.data .key) -}}
{{- index $existing.data .key | b64dec -}}
{{- else -}}
{{- randAlphaNum 40 -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A TOML value: string, integer, float, boolean, array or inline table. */}}
{{- define "augur.tomlValue" -}}
{{- $v := . -}}
{{- if kindIs "string" $v -}}
{{- toJson $v -}}
{{- else if kindIs "bool" $v -}}
{{- ternary "true" "false" $v -}}
{{- else if kindIs "float64" $v -}}
{{- if eq (float64 (int64 $v)) $v -}}{{- int64 $v -}}{{- else -}}{{- $v -}}{{- end -}}
{{- else if or (kindIs "int" $v) (kindIs "int64" $v) -}}
{{- $v -}}
{{- else if kindIs "slice" $v -}}
[{{- range $i, $e := $v -}}{{- if $i -}}, {{ end -}}{{- include "augur.tomlValue" $e -}}{{- end -}}]
{{- else if kindIs "map" $v -}}
{ {{- range $i, $k := keys $v | sortAlpha -}}{{- if $i -}}, {{ end -}}{{- include "augur.tomlKey" $k }} = {{ include "augur.tomlValue" (get $v $k) -}}{{- end -}} }
{{- else -}}
{{- fail (printf "a config value of kind %s cannot be written to augur.toml: %v" (kindOf $v) $v) -}}
{{- end -}}
{{- end -}}

{{- define "augur.tomlKey" -}}
{{- if regexMatch "^[A-Za-z0-9_-]+$" . -}}{{ . }}{{- else -}}{{ toJson . }}{{- end -}}
{{- end -}}

{{/* The keys of one table, `key = value` per line, in name order. */}}
{{- define "augur.tomlTable" -}}
{{- $lines := list -}}
{{- range $k := keys . | sortAlpha -}}
{{- $lines = append $lines (printf "%s = %s" (include "augur.tomlKey" $k) (include "augur.tomlValue" (get $ $k))) -}}
{{- end -}}
{{- join "\n" $lines -}}
{{- end -}}

{{/* server.drain_timeout_ms in whole seconds, rounded up. */}}
{{- define "augur.drainSeconds" -}}
{{- $ms := int64 30000 -}}
{{- if hasKey (default dict .Values.config.server) "drain_timeout_ms" -}}{{- $ms = int64 .Values.config.server.drain_timeout_ms -}}{{- end -}}
{{- div (add $ms 999) 1000 -}}
{{- end -}}

{{/* The pod's termination grace period: preStop, then the drain, then 10 s to exit. */}}
{{- define "augur.gracePeriod" -}}
{{- $pre := int64 .Values.lifecycle.preStopSleepSeconds -}}
{{- $drain := int64 (include "augur.drainSeconds" .) -}}
{{- $need := add $pre $drain 1 -}}
{{- $grace := add $pre $drain 10 -}}
{{- if not (kindIs "invalid" .Values.lifecycle.terminationGracePeriodSeconds) -}}
{{- $grace = int64 .Values.lifecycle.terminationGracePeriodSeconds -}}
{{- if lt $grace $need -}}
{{- fail (printf "lifecycle.terminationGracePeriodSeconds %d leaves no time to drain: it must be at least the preStop sleep (%d s) + config.server.drain_timeout_ms (%d s) + 1" $grace $pre $drain) -}}
{{- end -}}
{{- end -}}
{{- $grace -}}
{{- end -}}

{{/* Where the shared limit store is, if anywhere. */}}
{{- define "augur.limitStore" -}}
{{- if and .Values.redis.enabled .Values.redis.externalUrl -}}
{{- fail "redis.enabled and redis.externalUrl: choose one" -}}
{{- else if .Values.redis.enabled -}}
{{- printf "redis://%s:6379/0" (include "augur.child" (dict "ctx" . "suffix" "redis")) -}}
{{- else if .Values.redis.externalUrl -}}
{{- .Values.redis.externalUrl -}}
{{- end -}}
{{- end -}}

{{/* The settings the chart makes itself, refused in `config`. */}}
{{- define "augur.checkConfig" -}}
{{- $managed := dict
  "server" (list "listen" "admin_listen" "admin_token" "allow_unauthenticated" "admin_tls_cert" "admin_tls_key")
  "upstream" (list "url")
  "limits" (list "store") -}}
{{- range $table, $names := $managed -}}
{{- $given := default dict (get $.Values.config $table) -}}
{{- range $names -}}
{{- if hasKey $given . -}}
{{- fail (printf "config.%s.%s is set by the chart: see %s" $table . (get (dict "listen" "ports and listenAddress" "admin_listen" "ports and listenAddress" "admin_token" "auth.adminToken" "allow_unauthenticated" "auth.allowUnauthenticated" "admin_tls_cert" "the probes, which speak plain HTTP to the admin port" "admin_tls_key" "the probes, which speak plain HTTP to the admin port" "url" "upstreams" "store" "redis") .)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The checks that make a release that could not start fail to render. */}}
{{- define "augur.validate" -}}
{{- include "augur.checkConfig" . -}}
{{- $keys := .Values.auth.keys | default list -}}
{{- if and (not $keys) (not .Values.auth.allowUnauthenticated) -}}
{{- fail "auth.keys is empty: augur refuses to listen on the pod's addresses without an API key. Add a key, or set auth.allowUnauthenticated=true to serve without keys on purpose" -}}
{{- end -}}
{{- if and (not .Values.secret.create) (not .Values.secret.existingSecret) -}}
{{- fail "secret.create is false: name the Secret holding AUGUR_ADMIN_TOKEN (and the API keys) in secret.existingSecret" -}}
{{- end -}}
{{- if and .Values.secret.create .Values.secret.existingSecret -}}
{{- fail "secret.existingSecret is set: set secret.create=false too" -}}
{{- end -}}
{{- if not .Values.upstreams -}}
{{- fail "upstreams is empty: name at least one Ollama server (upstreams[].url)" -}}
{{- end -}}
{{- range $i, $u := .Values.upstreams -}}
{{- if or (not (kindIs "map" $u)) (not $u.url) -}}
{{- fail (printf "upstreams[%d] needs a url" $i) -}}
{{- end -}}
{{- end -}}
{{- $_ := include "augur.envKeys" . -}}
{{- $_ := include "augur.gracePeriod" . -}}
{{- $_ := include "augur.limitStore" . -}}
{{- end -}}
