{{/* Names and labels. */}}
{{- define "ctk.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ctk.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ctk.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ctk.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ctk.labels" -}}
{{ include "ctk.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The image reference: repository:tag, the tag defaulting to appVersion (what build.sh tags). */}}
{{- define "ctk.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion | toString -}}
{{- if eq $tag "latest" -}}
{{- fail "image.tag: \"latest\" is refused; use a version (default: the chart's appVersion)" -}}
{{- end -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}

{{/* The label the agent publishes through NFD after a successful configure. */}}
{{- define "ctk.readyLabelKey" -}}ctk.nvidia.com/runtime.configured{{- end -}}

{{/*
Checked values: fail early with a message naming the key, instead of a manifest the cluster
rejects later.
*/}}
{{- define "ctk.validate" -}}
{{- if not (has .Values.runtime (list "auto" "containerd" "docker" "crio")) -}}
{{- fail (printf "runtime: %q is not one of auto, containerd, docker, crio" .Values.runtime) -}}
{{- end -}}
{{- if not (has .Values.restartMode (list "systemd" "signal" "none")) -}}
{{- fail (printf "restartMode: %q is not one of systemd, signal, none" .Values.restartMode) -}}
{{- end -}}
{{- if not (has .Values.distribution (list "default" "k3s" "rke2" "microk8s")) -}}
{{- fail (printf "distribution: %q is not one of default, k3s, rke2, microk8s" .Values.distribution) -}}
{{- end -}}
{{- if and (ne .Values.distribution "default") (has .Values.runtime (list "docker" "crio")) -}}
{{- fail (printf "distribution %s runs its own containerd; runtime must be auto or containerd" .Values.distribution) -}}
{{- end -}}
{{- if and (eq .Values.restartMode "signal") (or (eq .Values.runtime "containerd") (eq .Values.runtime "crio") (ne .Values.distribution "default")) -}}
{{- fail "restartMode signal works for dockerd only: SIGHUP makes containerd exit, and CRI-O is restarted through systemd; use systemd or none" -}}
{{- end -}}
{{- range $key, $dir := dict "outlets.prometheusTextfileDir" .Values.outlets.prometheusTextfileDir "outlets.nfdFeaturesDir" .Values.outlets.nfdFeaturesDir -}}
{{- if and $dir (not (hasPrefix "/" (toString $dir))) -}}
{{- fail (printf "%s: must be an absolute host path or \"\"" $key) -}}
{{- end -}}
{{- end -}}
{{- if not (hasPrefix "/" (toString .Values.driverRoot)) -}}
{{- fail "driverRoot: must be an absolute host path" -}}
{{- end -}}
{{- end -}}

{{/*
Where each distribution keeps its containerd (host paths): the config the agent edits, the
directory of ctk's drop-in, the socket, the systemd units to restart (the first the node has:
servers and agents differ), the directory holding the distribution's own containerd binary (for
`containerd config dump` in the host's root), and the template k3s/RKE2 render config.toml from.
*/}}
{{- define "ctk.distribution" -}}
{{- include "ctk.validate" . -}}
{{- $d := dict
  "default" (dict "config" "/etc/containerd/config.toml" "dropIn" "/etc/containerd/conf.d/99-nvidia.toml" "socket" "/run/containerd/containerd.sock" "units" "containerd" "bin" "" "template" "")
  "k3s" (dict "config" "/var/lib/rancher/k3s/agent/etc/containerd/config.toml" "dropIn" "/var/lib/rancher/k3s/agent/etc/containerd/conf.d/99-nvidia.toml" "socket" "/run/k3s/containerd/containerd.sock" "units" "k3s,k3s-agent" "bin" "/var/lib/rancher/k3s/data/current/bin" "template" "/var/lib/rancher/k3s/agent/etc/containerd/config.toml.tmpl")
  "rke2" (dict "config" "/var/lib/rancher/rke2/agent/etc/containerd/config.toml" "dropIn" "/var/lib/rancher/rke2/agent/etc/containerd/conf.d/99-nvidia.toml" "socket" "/run/k3s/containerd/containerd.sock" "units" "rke2-server,rke2-agent" "bin" "/var/lib/rancher/rke2/bin" "template" "/var/lib/rancher/rke2/agent/etc/containerd/config.toml.tmpl")
  "microk8s" (dict "config" "/var/snap/microk8s/current/args/containerd-template.toml" "dropIn" "/var/snap/microk8s/current/args/conf.d/99-nvidia.toml" "socket" "/var/snap/microk8s/common/run/containerd.sock" "units" "snap.microk8s.daemon-containerd" "bin" "/snap/microk8s/current/bin" "template" "")
-}}
{{- get $d .Values.distribution | toJson -}}
{{- end -}}

{{/*
The host directories the agent writes, each mounted read-write at /host<dir> (over the read-only
host root). Exactly these: the engine config dirs, the CDI dir, the hook install dir, ctk's state
dirs and the enabled outlets. Sorted; a dir inside another one is covered by it.
*/}}
{{- define "ctk.writableDirs" -}}
{{- $dist := include "ctk.distribution" . | fromJson -}}
{{- $dirs := list "/run/cdi" "/usr/local/libexec/ctk" "/run/ctk" "/var/lib/ctk" -}}
{{- if has .Values.runtime (list "auto" "containerd") -}}
{{- $dirs = append $dirs (dir $dist.config) -}}
{{- $dirs = append $dirs (dir $dist.dropIn) -}}
{{- end -}}
{{- if and (eq .Values.distribution "default") (has .Values.runtime (list "auto" "docker")) -}}
{{- $dirs = append $dirs "/etc/docker" -}}
{{- end -}}
{{- if and (eq .Values.distribution "default") (has .Values.runtime (list "auto" "crio")) -}}
{{- $dirs = append $dirs "/etc/crio" -}}
{{- $dirs = append $dirs "/etc/crio/crio.conf.d" -}}
{{- end -}}
{{- with .Values.outlets.prometheusTextfileDir -}}
{{- $dirs = append $dirs . -}}
{{- end -}}
{{- with .Values.outlets.nfdFeaturesDir -}}
{{- $dirs = append $dirs . -}}
{{- end -}}
{{- $kept := list -}}
{{- range $d := $dirs | uniq -}}
{{- $covered := false -}}
{{- range $o := $dirs -}}
{{- if hasPrefix (printf "%s/" $o) $d -}}{{- $covered = true -}}{{- end -}}
{{- end -}}
{{- if not $covered -}}{{- $kept = append $kept $d -}}{{- end -}}
{{- end -}}
{{- $kept | sortAlpha | toJson -}}
{{- end -}}

{{/* A volume name for a host dir: "host-" plus the path with / turned into -. */}}
{{- define "ctk.volName" -}}
{{- printf "host%s" (. | replace "/" "-" | replace "_" "-" | replace "." "-") | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Node affinity shared by the agent and the uninstall DaemonSet. */}}
{{- define "ctk.affinity" -}}
nodeAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    nodeSelectorTerms:
      - matchExpressions:
          {{- if .Values.nodeSelection.nfd }}
          - key: feature.node.kubernetes.io/pci-10de.present
            operator: In
            values: ["true"]
          {{- end }}
          - key: {{ .Values.nodeSelection.optOutLabel }}
            operator: NotIn
            values: ["false"]
{{- end -}}

{{- define "ctk.tolerations" -}}
- key: nvidia.com/gpu
  operator: Exists
  effect: NoSchedule
{{- with .Values.tolerations }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The agent's settings, as the CTK_AGENT_* environment variables `ctk agent` reads. The ready file
and the outlet dirs are paths in the pod (the outlets: their read-write mounts under /host); the
CDI dir and driver root are host paths, resolved by the agent under its host root.
*/}}
{{- define "ctk.agentEnv" -}}
{{- $dist := include "ctk.distribution" . | fromJson -}}
- name: CTK_AGENT_HOST_ROOT
  value: /host
- name: CTK_AGENT_RUNTIME
  value: {{ ternary .Values.runtime "containerd" (eq .Values.distribution "default") | quote }}
- name: CTK_AGENT_ENABLE_CDI
  value: {{ .Values.cdi.enabled | toString | quote }}
{{- if ne .Values.distribution "default" }}
- name: CTK_AGENT_CONFIG
  value: {{ $dist.config | quote }}
- name: CTK_AGENT_SOCKET
  value: {{ $dist.socket | quote }}
- name: CTK_AGENT_RESTART_UNIT
  value: {{ $dist.units | quote }}
- name: CTK_AGENT_HOST_EXEC
  value: {{ printf "chroot /host /usr/bin/env PATH=%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" $dist.bin | quote }}
{{- if $dist.template }}
# k3s/RKE2 render config.toml from config.toml.tmpl at every start: the agent does not edit it.
- name: CTK_AGENT_CONFIGURE
  value: "false"
{{- if .Values.cdi.enabled }}
# The chart's template (an init container puts the one of the node's containerd generation
# there): restart k3s/RKE2 once to render it.
- name: CTK_AGENT_TEMPLATE
  value: {{ printf "%s/config-v3.toml.tmpl,%s" (dir $dist.template) $dist.template | quote }}
{{- end }}
{{- else }}
- name: CTK_AGENT_DROP_IN
  value: {{ $dist.dropIn | quote }}
{{- end }}
{{- end }}
- name: CTK_AGENT_RESTART_MODE
  value: {{ .Values.restartMode | quote }}
- name: CTK_AGENT_INTERVAL
  value: {{ .Values.interval | quote }}
- name: CTK_AGENT_DRIVER_ROOT
  value: {{ .Values.driverRoot | quote }}
- name: CTK_AGENT_CDI_DIR
  value: /var/run/cdi
- name: CTK_AGENT_READY_FILE
  value: /run/ctk-pod/ready
{{- with .Values.outlets.prometheusTextfileDir }}
- name: CTK_AGENT_PROMETHEUS_TEXTFILE
  value: {{ printf "/host%s" . | quote }}
{{- end }}
{{- with .Values.outlets.nfdFeaturesDir }}
- name: CTK_AGENT_NFD_FEATURES_DIR
  value: {{ printf "/host%s" . | quote }}
{{- end }}
{{- end -}}

{{/* Mounts: the host's / read-only at /host, then each written dir read-write over it. */}}
{{- define "ctk.volumeMounts" -}}
- name: host-root
  mountPath: /host
  readOnly: true
  mountPropagation: HostToContainer
{{- range (include "ctk.writableDirs" . | fromJsonArray) }}
- name: {{ include "ctk.volName" . }}
  mountPath: {{ printf "/host%s" . }}
{{- end }}
{{- end -}}

{{- define "ctk.volumes" -}}
- name: host-root
  hostPath:
    path: /
    type: Directory
{{- range (include "ctk.writableDirs" . | fromJsonArray) }}
- name: {{ include "ctk.volName" . }}
  hostPath:
    path: {{ . }}
    type: DirectoryOrCreate
{{- end }}
{{- end -}}
