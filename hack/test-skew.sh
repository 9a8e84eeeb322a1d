#!/usr/bin/env bash
# make test-skew: the integration suites (api, operator, scheduler, kueue: the
# scheduler's plugins and the operator's controllers and webhooks in-process, built
# from the main module) against kube-apiserver of each minor in the supported range,
# each built from the module proxy (hack/tools, hack/tools/skew135, hack/tools/skew136).
# etcd is the one 1.37 ships with for every row: the API server's version is what
# the range is about. Prints a table; exits non-zero when any row fails.
# Usage: hack/test-skew.sh [minor...]   (default: 1.35 1.36 1.37)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
K8S_BIN="${ROOT}/bin/k8s"
OUT="${ROOT}/bin/skew"
PKGS=(./test/integration/api/ ./test/integration/operator/ ./test/integration/scheduler/ ./test/integration/kueue/)

minors=("$@")
[ ${#minors[@]} -eq 0 ] && minors=(1.35 1.36 1.37)

tools=(etcd)
for m in "${minors[@]}"; do
  case "${m}" in
    1.37) tools+=(kube-apiserver) ;;
    1.35|1.36) tools+=("kube-apiserver-${m}") ;;
    *) echo "test-skew: no kube-apiserver ${m} (known: 1.35 1.36 1.37)" >&2; exit 2 ;;
  esac
done
hack/build-tools.sh "${tools[@]}" || exit 1

# The test binaries are compiled once and run against every API server.
mkdir -p "${OUT}/tests"
for p in "${PKGS[@]}"; do
  name="$(basename "${p}")"
  go test -c -o "${OUT}/tests/${name}.test" "${p}" || exit 1
done

declare -a rows=()
failed=0
for m in "${minors[@]}"; do
  dir="${OUT}/${m}"
  mkdir -p "${dir}"
  apiserver="kube-apiserver"
  [ "${m}" != 1.37 ] && apiserver="kube-apiserver-${m}"
  ln -sf "${K8S_BIN}/etcd" "${dir}/etcd"
  ln -sf "${K8S_BIN}/${apiserver}" "${dir}/kube-apiserver"
  version="$("${dir}/kube-apiserver" --version | awk '{print $2}')"
  for p in "${PKGS[@]}"; do
    name="$(basename "${p}")"
    log="${dir}/${name}.log"
    echo ">> ${name} against kube-apiserver ${version} (log: ${log#"${ROOT}/"})"
    start=$(date +%s)
    # A package's tests run in its own directory, as go test runs them.
    (cd "${p}" && KUBEBUILDER_ASSETS="${dir}" "${OUT}/tests/${name}.test" -test.count=1 -test.timeout=20m > "${log}" 2>&1)
    rc=$?
    secs=$(( $(date +%s) - start ))
    if [ ${rc} -eq 0 ]; then
      verdict="pass"
    else
      failed=1
      # The failing specs (Ginkgo) or tests (go test), as they are named in the log.
      fails="$(grep -E '^\s*\[FAIL\]|^--- FAIL' "${log}" | sed -E 's/^\s+//' | sort -u | head -5 | paste -sd ';' -)"
      verdict="FAIL ${fails:-see log}"
    fi
    rows+=("$(printf '| %-8s | %-9s | %5ss | %s |' "${version}" "${name}" "${secs}" "${verdict}")")
  done
done

echo
echo "| apiserver | suite     |  time | result |"
echo "|-----------|-----------|-------|--------|"
printf '%s\n' "${rows[@]}"
exit ${failed}
