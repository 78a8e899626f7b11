#!/usr/bin/env bash
# Why are my Snakemake jobs still PENDING on SLURM? Lists your pending jobs with the rule that
# made them (the slurm executor plugin writes rule_<rule>_wildcards_<...> into the job's comment),
# SLURM's reason, and, for the reasons that never clear by waiting, what to change in the profile.
# The plugin itself only reports a job once it has failed; a job that cannot ever start (reason
# PartitionConfig, ReqNodeNotAvail, InvalidAccount, ...) would otherwise wait silently forever.
#
#   scripts/slurm-pending.sh            # all your pending jobs
#   scripts/slurm-pending.sh --fail     # exit 1 when one of them waits for a reason to fix (CI)
set -euo pipefail

fail=0
[[ ${1:-} == --fail ]] && fail=1
command -v squeue >/dev/null || { echo "slurm-pending: no squeue here (not a SLURM login node?)" >&2; exit 2; }

# What to change, by SLURM's pending reason (squeue %r); reasons not listed clear by waiting
# (Resources, Priority, Dependency, ...).
advice() {
  case $1 in
    PartitionConfig | PartitionNodeLimit | PartitionTimeLimit | BadConstraints)
      echo "the request exceeds what the partition allows: lower the rule's mem_mb/runtime/threads or point slurm_partition at a partition that fits (cluster: settings of the profile; sinfo -o '%P %c %m %l %G')" ;;
    PartitionDown | PartitionInactive)
      echo "the partition is down: pick another one (cluster.partition in the profile)" ;;
    ReqNodeNotAvail* | NodeDown)
      echo "no node of the partition can run it now (down, drained or reserved): sinfo -R says why" ;;
    InvalidAccount | AccountNotAllowed | InvalidQOS | QOSNotAllowed | AssocGrp*Limit | AssocMax*Limit*)
      echo "the account or QOS is not allowed here: --default-resources slurm_account=<account> (sacctmgr show assoc user=$USER)" ;;
    *Limit*)
      echo "a limit of your account or QOS holds it: it starts when your other jobs end, or ask for less" ;;
    *) echo "" ;;
  esac
}

stuck=0
while IFS='|' read -r id state reason comment partition cpus mem; do
  [[ $state == PENDING ]] || continue
  rule=${comment#rule_}
  rule=${rule%%_wildcards_*}
  fix=$(advice "$reason")
  printf '%s  rule %s  partition %s  cpus %s  mem %s  reason %s\n' \
    "$id" "${rule:-?}" "$partition" "$cpus" "$mem" "$reason"
  if [[ -n $fix ]]; then
    printf '    -> %s\n' "$fix"
    stuck=1
  fi
done < <(squeue -h -u "$(id -un)" -t PENDING -o '%i|%T|%r|%k|%P|%C|%m')

((fail && stuck)) && exit 1
exit 0
