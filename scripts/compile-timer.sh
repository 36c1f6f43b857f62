#!/usr/bin/env bash
# Compiler/linker launcher that records the CPU seconds of each compile and link of a build, to see where a
# cold build's time goes on a shared machine (wall times in .ninja_log grow with the machine's load; CPU
# seconds do not). Used by scripts/compile-profile.sh; one tab-separated line per command:
#   user_s  sys_s  wall_s  output_file
# The log is $XPOOL_COMPILE_TIMER_LOG, else compile-times.tsv beside this build's CMakeCache.txt (the cwd).
log=${XPOOL_COMPILE_TIMER_LOG:-$PWD/compile-times.tsv}
out=unknown
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  if [[ "${args[i]}" == -o ]]; then out=${args[i + 1]:-unknown}; fi
done
tmp=$(mktemp)
/usr/bin/time -f '%U	%S	%e' -o "$tmp" "$@"
rc=$?
printf '%s\t%s\n' "$(tail -n 1 "$tmp")" "$out" >>"$log"
rm -f "$tmp"
exit $rc
