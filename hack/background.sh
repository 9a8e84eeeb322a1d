#!/usr/bin/env bash
# Runs a step of make test in the background and waits for it later, so that a
# build that only a later step needs compiles while an earlier step's tests wait
# on their API servers.
#
#   hack/background.sh start NAME CMD [ARG...]   start CMD at a lower CPU priority; its
#                                                output goes to bin/NAME.log
#   hack/background.sh wait NAME                 wait for it, print its output, exit
#                                                with its status
set -euo pipefail

bin="$(cd "$(dirname "$0")/.." && pwd)/bin"
mkdir -p "${bin}"

case "${1:-}" in
start)
  name="$2"
  shift 2
  rm -f "${bin}/${name}.rc"
  echo ">> ${name}: $* (in the background; output in bin/${name}.log)"
  (
    rc=0
    nice -n 10 "$@" >"${bin}/${name}.log" 2>&1 || rc=$?
    echo "${rc}" >"${bin}/${name}.rc"
  ) </dev/null &
  echo $! >"${bin}/${name}.pid"
  ;;
wait)
  name="$2"
  [[ -e "${bin}/${name}.log" ]] || { echo "hack/background.sh: ${name} was not started" >&2; exit 2; }
  start=${SECONDS}
  pid="$(cat "${bin}/${name}.pid")"
  while [[ ! -s "${bin}/${name}.rc" ]]; do
    if ! kill -0 "${pid}" 2>/dev/null && [[ ! -s "${bin}/${name}.rc" ]]; then
      cat "${bin}/${name}.log"
      echo "${name} ended without an exit status (killed?)" >&2
      exit 1
    fi
    sleep 1
  done
  echo ">> ${name} (waited $((SECONDS - start)) s for it):"
  cat "${bin}/${name}.log"
  rc="$(cat "${bin}/${name}.rc")"
  if [[ "${rc}" != 0 ]]; then
    echo "${name} failed (exit ${rc}; above)" >&2
  fi
  exit "${rc}"
  ;;
*)
  echo "usage: $0 start NAME CMD [ARG...] | wait NAME" >&2
  exit 2
  ;;
esac
