#!/usr/bin/env bash
# Render the plain manifests in deploy/manifests/ from the Helm chart (default values, release
# "ctk" in namespace ctk-system). tests/deploy fails when the committed files differ.
#   deploy/render-manifests.sh [OUTDIR]     (default: deploy/manifests; HELM=path/to/helm)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/manifests}"
helm="${HELM:-helm}"
chart="$here/helm/ctk"
command -v "$helm" >/dev/null || { echo "render-manifests.sh: helm not found (set HELM=)" >&2; exit 2; }
mkdir -p "$out"
header="# Rendered from deploy/helm/ctk by deploy/render-manifests.sh; do not edit."
common=(ctk "$chart" --namespace ctk-system)
{
    echo "$header"
    echo "# Install: kubectl apply -f ctk.yaml"
    "$helm" template "${common[@]}" --set namespace.create=true --no-hooks
} >"$out/ctk.yaml"
{
    echo "$header"
    echo "# helm uninstall's pre-delete step for a kubectl-installed agent: kubectl apply -f uninstall.yaml,"
    echo "# kubectl -n ctk-system wait --for=condition=complete job/ctk-uninstall-wait --timeout=11m,"
    echo "# then kubectl delete -f uninstall.yaml -f ctk.yaml."
    "$helm" template "${common[@]}" --show-only templates/uninstall-hook.yaml
} >"$out/uninstall.yaml"
echo "$out/ctk.yaml"
echo "$out/uninstall.yaml"
