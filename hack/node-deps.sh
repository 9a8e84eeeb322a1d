#!/usr/bin/env bash
# Installs what the real node of make test-e2e-node takes from the machine rather
# than from source: Debian's runc (containerd's runtime; Debian's crun refuses these
# machines' hybrid cgroups) and iptables (kube-proxy's and the kubelet's rules).
# Needs root; nothing is installed when both are present.
set -euo pipefail
missing=()
command -v runc > /dev/null || missing+=(runc)
command -v iptables-restore > /dev/null || missing+=(iptables)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "node-deps: ${missing[*]} missing and not root: install them (apt-get install ${missing[*]}) or run as root" >&2
  exit 1
fi
echo ">> installing ${missing[*]} (apt-get; the real node's runtime and rules)"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null 2>&1 || {
  apt-get update > /dev/null
  apt-get install -y --no-install-recommends "${missing[@]}" > /dev/null
}
