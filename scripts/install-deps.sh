#!/usr/bin/env bash
# Installs the Debian packages in scripts/debian-packages.txt that are missing. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t wanted < <(grep -v -e '^#' -e '^[[:space:]]*$' "$here/debian-packages.txt")
missing=()
for pkg in "${wanted[@]}"; do
  # npm also comes inside other Node.js builds (NodeSource's nodejs provides and conflicts with Debian's npm).
  if [ "$pkg" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#wanted[@]} Debian packages present"
  exit 0
fi
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq || "${sudo_cmd[@]}" apt-get update
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
