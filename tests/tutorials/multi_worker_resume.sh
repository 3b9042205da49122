#!/usr/bin/env bash
# Tutorial 07 as a job that loses a worker: run whole; run again with the last worker killed
# (SIGKILL) mid-epoch, which must end the job within 60 s naming the rank, never hang; run the
# same command again, which must restore the backup and end with the whole run's weights, bit
# for bit (the fingerprint every worker agreed on).
#   multi_worker_resume.sh <mpirun> <multi_worker program> <fortunes dir> <work dir>
set -euo pipefail
mpirun=$1 program=$2 fortunes=$3 work=$4
if [[ ! -d "$fortunes" ]]; then
  echo "SKIPPED: $fortunes is missing (bash .ci/setup installs fortunes)"
  exit 0
fi
rm -rf "$work" && mkdir -p "$work"
run() {  # run <output dir> [flags...]: the job on 2 workers with short settings
  local out=$1
  shift
  "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 "$program" --max-per-language 150 --epochs 2 \
    --vocab-size 800 --max-length 32 --verbose 0 --backup-every 8 --fortunes-dir "$fortunes" --output-dir "$work/$out" \
    --json-out "$work/$out.json" "$@"
}
fingerprint() { sed -n 's/.*"weights_fingerprint": "\(0x[0-9a-f]*\)".*/\1/p' "$work/$1.json"; }

run whole > "$work/whole.log" 2>&1
whole=$(fingerprint whole)
[[ -n "$whole" ]] || { echo "FAIL: the whole run wrote no fingerprint"; cat "$work/whole.log"; exit 1; }

start=$SECONDS
if run resumed --crash-at-step 27 > "$work/killed.log" 2>&1; then
  echo "FAIL: the job whose worker was killed exited 0"; cat "$work/killed.log"; exit 1
fi
took=$((SECONDS - start))
(( took <= 60 )) || { echo "FAIL: the job took ${took} s to end after its worker died (at most 60)"; exit 1; }
grep -q "rank 1 .* exited on signal 9" "$work/killed.log" ||
  { echo "FAIL: the job's end does not name the killed rank"; cat "$work/killed.log"; exit 1; }
[[ -f "$work/resumed/backup/checkpoint" ]] || { echo "FAIL: no backup survived the kill"; exit 1; }

run resumed > "$work/resumed.log" 2>&1
grep -q "BackupAndRestore: restored" "$work/resumed.log" ||
  { echo "FAIL: the second run did not restore the backup"; cat "$work/resumed.log"; exit 1; }
resumed=$(fingerprint resumed)
echo "killed job ended in ${took} s; weights fingerprint whole $whole, killed and resumed $resumed"
[[ "$resumed" == "$whole" ]] || { echo "FAIL: the resumed run's weights differ from the whole run's"; exit 1; }
