#!/usr/bin/env bash
# Builds the pinned tools of hack/tools into bin/ from source (Go module proxy only).
# A tool is rebuilt only when its module's go.mod or go.sum, or the build recipe below, changes (its version stamp).
# Usage: hack/build-tools.sh [--download] [tool...]   (default: all)
#   --download: only fetch, in the background, the modules the stale ones need (make
#   demo starts it first, so that no build later waits for the network).
# Tools: etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwok-stages helm helm4 controller-gen training-operator scheduler-plugins kueue lws kuberay jobset trainer golangci-lint
#        promql-names (the e2e's dashboard check)
#        kube-apiserver-1.35 kube-apiserver-1.36 (make test-skew; never built by default)
#        the real node of make test-e2e-node (never built by default): kubelet kube-proxy containerd
#        containerd-shim-runc-v2 ctr cni-bridge cni-host-local cni-loopback
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${ROOT}/hack/tools"
BIN="${ROOT}/bin"
# envtest (KUBEBUILDER_ASSETS) expects etcd and kube-apiserver side by side.
K8S_BIN="${BIN}/k8s"
mkdir -p "${K8S_BIN}"

declare -A PKG=(
  [etcd]=./etcd
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
  [training-operator]=github.com/kubeflow/training-operator/cmd/training-operator.v1
  [kwok]=sigs.k8s.io/kwok/cmd/kwok
  [kwok-stages]=./kwokstages
  [helm]=helm.sh/helm/v3/cmd/helm
  [helm4]=helm.sh/helm/v4/cmd/helm
  [controller-gen]=sigs.k8s.io/controller-tools/cmd/controller-gen
  [scheduler-plugins]=sigs.k8s.io/scheduler-plugins/cmd/scheduler
  [kueue]=sigs.k8s.io/kueue/cmd/kueue
  [lws]=sigs.k8s.io/lws/cmd
  [kuberay]=github.com/ray-project/kuberay/ray-operator
  [jobset]=sigs.k8s.io/jobset
  [trainer]=github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
  [kube-apiserver-1.35]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-apiserver-1.36]=k8s.io/kubernetes/cmd/kube-apiserver
  [golangci-lint]=github.com/golangci/golangci-lint/v2/cmd/golangci-lint
  [promql-names]=./promql-names
  [kubelet]=k8s.io/kubernetes/cmd/kubelet
  [kube-proxy]=k8s.io/kubernetes/cmd/kube-proxy
  [containerd]=github.com/containerd/containerd/v2/cmd/containerd
  [containerd-shim-runc-v2]=github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
  [ctr]=github.com/containerd/containerd/v2/cmd/ctr
  [cni-bridge]=github.com/containernetworking/plugins/plugins/main/bridge
  [cni-host-local]=github.com/containernetworking/plugins/plugins/ipam/host-local
  [cni-loopback]=github.com/containernetworking/plugins/plugins/main/loopback
)
# stamp is the version stamp of a tool (stamp MODULE TOOL): its module's go.mod, go.sum and the build
# recipe of this script (the lines between the recipe markers: how a tool is compiled
# and linked). Editing the rest of the script (a new tool, a message) rebuilds nothing.
recipe() { sed -n '/^  # recipe:begin/,/^  # recipe:end/p' "${BASH_SOURCE[0]}"; }
# The tools of hack/tools itself (and Helm v4's) also depend on how the main module's
# binaries are compiled (the shared-packages block).
shared_recipe() { sed -n '/^# shared:begin/,/^# shared:end/p' "${BASH_SOURCE[0]}"; }
# A tool whose main package is in its module (./etcd, ./kwokstages, ./promql-names)
# adds that package's files: editing them rebuilds it.
stamp() {
  { cat "${TOOLS_DIR}/$1/go.mod" "${TOOLS_DIR}/$1/go.sum"; recipe; if shares "$1"; then shared_recipe; fi
    case "${PKG[$2]}" in ./*) cat "${TOOLS_DIR}/$1/${PKG[$2]#./}"/*.go ;; esac
  } | sha256sum | cut -c1-16
}

# shares: the tool module is compiled with the main module's settings (hack/tools,
# and Helm v4's module, which pins the same library versions), static and trimmed;
# so is the real node's (hack/tools/node: containerd, its shim and the CNI plugins
# run as static binaries, without cgo's snapshotters).
shares() { [ "$1" = . ] || [ "$1" = helm4 ] || [ "$1" = node ] || [ "$1" = kubelet ]; }

# shared:begin
# hack/tools shares its Kubernetes libraries with the main module, whose binaries
# are static with their paths trimmed (as in the images; Makefile GO_BUILD): its
# tools are compiled the same way, so that each package is compiled once for both
# (no DWARF generated: Makefile STATIC_FLAGS).
shared_env=(CGO_ENABLED=0)
shared_flags=(-trimpath)
shared_gcflags="-dwarf=false"
# shared:end

ORDER=(controller-gen etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwok-stages helm helm4 training-operator scheduler-plugins kueue lws kuberay jobset trainer golangci-lint promql-names)
# Built only when named (make test-skew): the API servers of the older minors in the supported range.
SKEW=(kube-apiserver-1.35 kube-apiserver-1.36)
# Built only when named (make test-e2e-node): the real node.
NODE=(kubelet kube-proxy containerd containerd-shim-runc-v2 ctr cni-bridge cni-host-local cni-loopback)

# The module each tool is built in: hack/tools, except Kubeflow's training-operator,
# scheduler-plugins' kube-scheduler, Kueue, and LeaderWorkerSet, KubeRay, JobSet and
# Kubeflow Trainer (hack/tools/trainingoperator, hack/tools/schedulerpluginsbin,
# hack/tools/kueue, hack/tools/frameworks: the last four share one module, and so one
# build), which pin the Kubernetes libraries they were released with, and the older API servers of make test-skew
# (hack/tools/skew135, hack/tools/skew136). hack/tools (kwok included) shares its Kubernetes
# libraries and their dependencies with the main module at the same versions, so the
# packages compiled for one come from the build cache for the other.
declare -A MODDIR=([training-operator]=trainingoperator [scheduler-plugins]=schedulerpluginsbin [kueue]=kueue [lws]=frameworks [kuberay]=frameworks [jobset]=frameworks [trainer]=frameworks [golangci-lint]=lint [helm4]=helm4 [promql-names]=promql
  [kube-apiserver-1.35]=skew135 [kube-apiserver-1.36]=skew136
  [kubelet]=kubelet [kube-proxy]=kubelet [containerd]=node [containerd-shim-runc-v2]=node [ctr]=node [cni-bridge]=node [cni-host-local]=node [cni-loopback]=node)
download=false
if [ "${1:-}" = --download ]; then
  download=true
  shift
fi
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=("${ORDER[@]}")

# The stale tools, grouped by module: one `go build` per module builds them together
# (shared packages once, links in parallel).
declare -A STALE=()
for t in "${tools[@]}"; do
  pkg="${PKG[$t]:-}"
  if [ -z "${pkg}" ]; then
    echo "build-tools: unknown tool '${t}' (known: ${ORDER[*]} ${SKEW[*]} ${NODE[*]})" >&2
    exit 2
  fi
  mod="${MODDIR[$t]:-.}"
  if [ -x "${K8S_BIN}/${t}" ] && [ "$(cat "${K8S_BIN}/${t}.stamp" 2>/dev/null)" = "$(stamp "${mod}" "${t}")" ]; then
    continue
  fi
  case " ${STALE[${mod}]:-} " in *" ${t} "*) ;; *) STALE[${mod}]="${STALE[${mod}]:-} ${t}" ;; esac
done

if ${download}; then
  [ ${#STALE[@]} -eq 0 ] && exit 0
  echo ">> fetching the modules of${STALE[*]} in the background (log: bin/k8s/download.log)"
  (
    for mod in "${!STALE[@]}"; do
      read -r -a group <<< "${STALE[${mod}]}"
      pkgs=()
      for t in "${group[@]}"; do pkgs+=("${PKG[$t]}"); done
      env=()
      if shares "${mod}"; then env=("${shared_env[@]}"); fi
      # go list loads the packages as the build will (its build tags), which fetches
      # exactly the modules the build needs.
      (cd "${TOOLS_DIR}/${mod}" && env "${env[@]}" nice -n 10 go list -e -deps "${pkgs[@]}" > /dev/null) || true
    done
  ) > "${K8S_BIN}/download.log" 2>&1 < /dev/null &
  exit 0
fi

for mod in "${!STALE[@]}"; do
  read -r -a group <<< "${STALE[${mod}]}"
  moddir="${TOOLS_DIR}/${mod}"
  pkgs=()
  for t in "${group[@]}"; do pkgs+=("${PKG[$t]}"); done
  echo ">> building ${group[*]} (hack/tools/${mod#.}; a first build takes minutes: kube-apiserver alone ~5 min on 2 cores)"
  start=$(date +%s)
  # recipe:begin
  # hack/tools builds with the main module's settings (the shared block); the
  # modules of framework controllers with Go's defaults.
  ldflags="-s -w"
  kv="$(awk '{for (i = 1; i < NF; i++) if ($i == "k8s.io/kubernetes") {print $(i + 1); exit}}' "${moddir}/go.mod")"
  if [ -n "${kv}" ]; then
    # Report the real version on /version (helm checks a chart's kubeVersion against it).
    minor="$(echo "${kv}" | cut -d. -f2)"
    ldflags+=" -X k8s.io/component-base/version.gitVersion=${kv} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
    ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=${kv} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${minor}"
  fi
  # The framework controllers the e2e and the demo run (training-operator, Kueue) pin
  # their own Kubernetes libraries, so nothing of theirs comes from the build cache;
  # compiled without optimisation they build about a fifth faster (Kueue cold: 322 s
  # against 398 s on 2 cores) and do the little work a test asks of them as well.
  # No tool is debugged, and its binary is stripped: no DWARF is generated (7-14%
  # less compile CPU).
  gcflags="all=-dwarf=false"
  case "${mod}" in trainingoperator|kueue) gcflags="all=-N -l -dwarf=false" ;; esac
  tmp="$(mktemp -d "${K8S_BIN}/.build.XXXXXX")"
  env=() flags=()
  if shares "${mod}"; then env=("${shared_env[@]}") flags=("${shared_flags[@]}") gcflags="all=${shared_gcflags}"; fi
  (cd "${moddir}" && env "${env[@]}" go build "${flags[@]}" -gcflags "${gcflags}" -ldflags "${ldflags}" -o "${tmp}/" "${pkgs[@]}")
  # recipe:end
  for t in "${group[@]}"; do
    built="${tmp}/$(basename "${PKG[$t]}")"
    mv "${built}" "${K8S_BIN}/${t}"
    stamp "${mod}" "${t}" > "${K8S_BIN}/${t}.stamp"
  done
  rmdir "${tmp}"
  echo ">> built ${group[*]} in $(( $(date +%s) - start ))s"
done
