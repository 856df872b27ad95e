#!/usr/bin/env bash
# Open MPI's remote launcher on the bed (mpirun --mca plm_rsh_agent this-file): called as "mpi-agent.sh HOST
# COMMAND...", it runs COMMAND (Open MPI's daemon) inside the namespace of the emulated host at address HOST
# (198.18.0.1I -> sc-hI), where no ssh is needed; the daemon calls mpirun back over the bridge.
set -eu
host=$1
shift
i=$(( ${host##*.} - 10 ))
exec ip netns exec "sc-h$i" sh -c "$*"
