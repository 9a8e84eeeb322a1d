#!/usr/bin/env bash
# make demo / make demo-down: runs hack/demo in the background, shows its progress,
# prints the placement report, and leaves the cluster up until `make demo-down`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${ROOT}/.demo"
PID="${DIR}/pid"

down() {
  if [ -f "${PID}" ] && kill -0 "$(cat "${PID}")" 2>/dev/null; then
    kill -TERM "$(cat "${PID}")"
    for _ in $(seq 1 60); do kill -0 "$(cat "${PID}")" 2>/dev/null || break; sleep 0.5; done
    echo "demo cluster stopped"
  else
    echo "no demo cluster running"
  fi
  rm -f "${PID}"
}

if [ "${1:-}" = "down" ]; then
  down
  exit 0
fi

down >/dev/null
rm -rf "${DIR}"
mkdir -p "${DIR}"
# bin/kubenexus-demo is built by make demo, with the binaries.
nohup "${ROOT}/bin/kubenexus-demo" -root "${ROOT}" -dir "${DIR}" > "${DIR}/demo.log" 2>&1 &
echo $! > "${PID}"
shown=0
placed=0
while true; do
  lines=$(wc -l < "${DIR}/demo.log")
  if [ "${lines}" -gt "${shown}" ]; then
    sed -n "$((shown + 1)),${lines}p" "${DIR}/demo.log" | grep '^>>' || true
    shown=${lines}
  fi
  if [ "${placed}" = 0 ] && [ -f "${DIR}/placement.txt" ]; then
    echo
    cat "${DIR}/placement.txt"
    echo
    placed=1
  fi
  if [ -f "${DIR}/report.txt" ]; then
    # The Kueue scenario (Kueue was built while the rest ran) and how to reach the cluster.
    cat "${DIR}/kueue.txt"
    # kubectl is for your shell only: the demo built it last (this is a no-op then).
    "${ROOT}/hack/build-tools.sh" kubectl || echo "kubectl did not build (see above); the cluster is up all the same" >&2
    cat <<EOF

kubectl is built from source into bin/k8s (hack/build-tools.sh kubectl). In your shell:
  export KUBECONFIG=${DIR}/kubeconfig
  export PATH=${ROOT}/bin/k8s:\$PATH
  kubectl get nodes -L topology.kubernetes.io/zone,nvidia.com/gpu.product
  kubectl get pytorchjobs,mpijobs -A
  kubectl get podgroups.scheduling.kubenexus.io,podgroups.scheduling.x-k8s.io -A
Logs of every process (training-operator*.log included) are in ${DIR}/.
EOF
    exit 0
  fi
  if [ -f "${DIR}/failed" ] || ! kill -0 "$(cat "${PID}")" 2>/dev/null; then
    echo "demo failed; its log:" >&2
    tail -n 40 "${DIR}/demo.log" >&2
    exit 1
  fi
  sleep 1
done
