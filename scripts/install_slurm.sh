#!/usr/bin/env bash
# Install Debian's Slurm (slurmctld, slurmd, slurm-client) and munge, from which the Slurm
# tests start a private one-node cluster (tests/slurm_cluster.py). Does nothing when they
# are already there; installs only as root with apt-get (CI), else says why not.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"  # the daemons live there; a non-root PATH may lack it
missing=()
for command in slurmctld slurmd sbatch munged; do
    command -v "$command" >/dev/null 2>&1 || missing+=("$command")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "install_slurm.sh: ${missing[*]} missing; install slurmctld slurmd slurm-client" \
        "munge as root (apt-get) to run the Slurm tests" >&2
    exit 0
fi
# The packages must not start the system's own daemons: the tests start their own.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    made_policy=1
fi
trap '[[ $made_policy -eq 1 ]] && rm -f "$policy"' EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
